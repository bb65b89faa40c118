# Shell functions for ~/.bashrc or ~/.zshrc: the big copiers run guarded,
# everything else as before.  Check it works with:
#   USEONCE_TRACE=stderr cp big.iso /mnt/usb/    (prints "read stream..." lines)
#   fincore big.iso                              (little of it stays cached)
for uo_cmd in cp mv dd rsync tar; do
	eval "$uo_cmd() { useonce $uo_cmd \"\$@\"; }"
done
unset uo_cmd
