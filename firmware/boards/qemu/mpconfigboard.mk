# Zeal's emulated board: MicroPython's QEMU port on MPS2-AN385 (Cortex-M3), plus what a real
# board has and the stock port lacks. Built by tools/qemu_board.py as
#   make -C ports/qemu BOARD=ZEAL_QEMU BOARD_DIR=<this folder> BUILD=<cache>
# (make runs in ports/qemu, so relative paths below are relative to it). README.md here says
# what is added and why.

# The stock board: Cortex-M3, soft float (single precision), the mps2-an385 machine.
include boards/MPS2_AN385/mpconfigboard.mk

# littlefs v2, on a RAM block device that _boot.py mounts at /
MICROPY_VFS_LFS2 = 1

# _boot.py, frozen (as on rp2 and esp32): mounts the filesystem before boot.py and main.py
FROZEN_MANIFEST = $(BOARD_DIR)/manifest.py
# The manifest needs nothing from micropython-lib, but make insists on that folder's
# README.md; a source tree without the submodule (as the snapshot CI uses) gets an empty
# stand-in in the build folder.
ifeq ($(wildcard $(MPY_LIB_DIR)/README.md),)
MPY_LIB_DIR = $(BUILD)/no-micropython-lib
$(shell mkdir -p $(MPY_LIB_DIR) && touch $(MPY_LIB_DIR)/README.md)
endif

# zeal_board.h: the added features, included first in every C file of the build
CFLAGS += -include $(BOARD_DIR)/zeal_board.h

# zeal_board.c: a main() that runs _boot.py, boot.py and main.py (the port's own main is
# linked out), machine.reset() rebooting the emulated board (exit(0) is how the port's
# machine.reset ends), the UART received by interrupt into a ring buffer (Ctrl-C
# stops running code; waits sleep in WFI), and
# machine.unique_id(). GNU ld's --wrap=SYMBOL sends every call to SYMBOL from another object
# file to __wrap_SYMBOL; the original stays reachable as __real_SYMBOL.
SRC_C += $(BOARD_DIR)/zeal_board.c
LDFLAGS += --wrap=main --wrap=exit --wrap=mp_hal_stdin_rx_chr --wrap=mp_hal_stdio_poll
LDFLAGS += --wrap=mp_hal_delay_ms
