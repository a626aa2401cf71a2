// Zeal's emulated board (MPS2-AN385): configuration added to MicroPython's QEMU port.
// Included first in every C file of the build (-include, mpconfigboard.mk); mpconfig.h takes
// these values over its defaults. Macros and plain declarations only.

// os.urandom, from the port's mp_hal_get_random: a linear congruential generator that starts
// from the same state at every boot. NOT a secure generator: this board is for tests only.
#define MICROPY_PY_OS_URANDOM (1)

// machine.unique_id() (zeal_board.c), as real boards have
#define MICROPY_PY_MACHINE_EXTRA_GLOBALS \
    { MP_ROM_QSTR(MP_QSTR_unique_id), MP_ROM_PTR(&zeal_machine_unique_id_obj) },
extern const struct _mp_obj_fun_builtin_fixed_t zeal_machine_unique_id_obj;
