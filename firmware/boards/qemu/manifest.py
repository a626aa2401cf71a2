# Frozen into the emulated board's firmware: the boot-time filesystem mount only.
freeze("$(BOARD_DIR)", "_boot.py")
