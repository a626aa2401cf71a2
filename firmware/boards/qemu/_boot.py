# Frozen into Zeal's emulated board (MPS2-AN385): mounts a littlefs filesystem at / before
# boot.py and main.py run, as the rp2 port's _boot.py mounts its flash.
#
# The "flash" is 2 MiB of the board's PSRAM at 0x21400000, after the 4 MiB the port keeps for
# a ROMFS image. It lies outside the firmware image, so it keeps its files across
# machine.reset() (a system reset); it is empty when QEMU starts, and formatted then.
# Blocks are copied by viper code: no heap is allocated per block read or written.
#
# A board started without a filesystem (tools/qemu_board.py: QemuBoard(filesystem=False), as
# the stock QEMU port is, for the test that such a board is refused) has the word _NO_FS at
# _KNOB, put there by QEMU before the firmware starts: nothing is mounted.
import machine
import micropython
import sys
import vfs

_BASE = const(0x21400000)
_SIZE = const(2 * 1024 * 1024)
_BLOCK = const(4096)
_KNOB = const(_BASE + _SIZE)
_NO_FS = const(0x2F4E4F46)


@micropython.viper
def _copy(dst: ptr8, src: ptr8, n: int):
    i = 0
    if ((int(dst) | int(src) | n) & 3) == 0:
        d = ptr32(dst)
        s = ptr32(src)
        n >>= 2
        while i < n:
            d[i] = s[i]
            i += 1
    else:
        while i < n:
            dst[i] = src[i]
            i += 1


class RAMFlash:
    """A block device (the extended interface vfs.VfsLfs2 uses) on memory at _BASE. The copy
    function is an attribute, not a global: this file runs in __main__'s namespace, which
    the REPL and main.py share, and its names are deleted below."""

    def __init__(self):
        self.copy = _copy

    def readblocks(self, block, buf, off=0):
        self.copy(buf, _BASE + block * _BLOCK + off, len(buf))

    def writeblocks(self, block, buf, off=0):
        self.copy(_BASE + block * _BLOCK + off, buf, len(buf))

    def ioctl(self, op, arg):
        if op == 4:  # block count
            return _SIZE // _BLOCK
        if op == 5:  # block size
            return _BLOCK
        if op == 6:  # erase: nothing to do in RAM
            return 0
        return None


def _mount():
    if machine.mem32[_KNOB] == _NO_FS:
        return
    bdev = RAMFlash()
    try:
        vfs.mount(vfs.VfsLfs2(bdev), "/")
    except OSError:
        vfs.VfsLfs2.mkfs(bdev)
        vfs.mount(vfs.VfsLfs2(bdev), "/")


_mount()
sys.path.append("/lib")  # where `zeal flash` and mip put packages, as on rp2 and esp32
del _mount, RAMFlash, _copy, vfs, micropython, sys, machine
