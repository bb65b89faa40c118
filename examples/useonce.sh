# Shell functions for ~/.bashrc, ~/.zshrc or ~/.profile (sh, bash, zsh): the
# big copiers run guarded, everything else as before.  Where useonce is not
# installed nothing is defined, so the shell works the same.
#
# Check it works, in a new shell:
#   type cp                              cp is a function
#   USEONCE_STATS=stderr cp big.iso /mnt/usb/
#                                        one "useonce: stats: cp[...]" line
#   fincore big.iso /mnt/usb/big.iso     little of either stays cached
# Or watch every decision:  useonce --trace stderr cp big.iso /mnt/usb/
#
# An alias does the same for one command, in interactive shells only:
#   alias cp='useonce cp'
if command -v useonce >/dev/null 2>&1; then
	for uo_cmd in cp mv dd rsync tar; do
		eval "$uo_cmd() { useonce $uo_cmd \"\$@\"; }"
	done
	unset uo_cmd
fi
