# The README's picture: gnuplot docs/use-once-cp.gp (data from one `make bench` run).
set terminal pngcairo size 900,420 font ',10'
set output 'docs/use-once-cp.png'
set title "cp of a 1 GiB file in a 256 MiB memory cgroup, after an 85 MiB hot file was read once"
set key at graph 0.98, graph 0.72 right opaque box
set grid
set xlabel 'seconds since cp started'
set ylabel 'hot file still cached, %'
set y2label 'copy (source + destination) cached, MiB'
set yrange [0:105]
set y2range [0:270]
set ytics nomirror
set y2tics
d = 'docs/use-once-cp.dat'
plot d index 0 using 1:2 axes x1y1 with lines lw 3 lc rgb '#b03060' title 'hot file, cp alone', \
     d index 1 using 1:2 axes x1y1 with lines lw 3 lc rgb '#e69f00' title 'hot file, cp under nocache', \
     d index 2 using 1:2 axes x1y1 with lines lw 3 lc rgb '#0072b2' title 'hot file, cp under libuseonce', \
     d index 0 using 1:3 axes x1y2 with lines lw 1.5 dt 2 lc rgb '#b03060' title 'copy in cache, cp alone', \
     d index 2 using 1:3 axes x1y2 with lines lw 1.5 dt 2 lc rgb '#0072b2' title 'copy in cache, under libuseonce'
