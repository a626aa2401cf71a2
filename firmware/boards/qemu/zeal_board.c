// Zeal's emulated board (MPS2-AN385): what a real board does and MicroPython's QEMU port does
// not. Linked with --wrap (mpconfigboard.mk): a call to SYMBOL from another object file lands
// in __wrap_SYMBOL here. See README.md in this folder.

#include <stdint.h>
#include <stdlib.h>

#include "py/compile.h"
#include "py/gc.h"
#include "py/mphal.h"
#include "py/runtime.h"
#include "py/stream.h"
#include "shared/runtime/interrupt_char.h"
#include "shared/runtime/pyexec.h"

static void uart_rx_interrupt_init(void);

// ---- boot: _boot.py (frozen: mounts the filesystem), boot.py, main.py -----------------------
// The port's main() runs the REPL only. This one runs the scripts as the rp2 and esp32 ports
// do: boot.py at every start, main.py only at a start into the friendly REPL (not after a
// soft reset from the raw REPL, which is how mpremote gets a board that runs main.py back).

static uint32_t zeal_heap[MICROPY_HEAP_SIZE / sizeof(uint32_t)];

int __wrap_main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    uart_rx_interrupt_init();
    mp_cstack_init_with_sp_here(MICROPY_STACK_SIZE);
    gc_init(zeal_heap, (char *)zeal_heap + MICROPY_HEAP_SIZE);
    for (;;) {
        mp_init();
        pyexec_frozen_module("_boot.py", false);
        int ret = pyexec_file_if_exists("boot.py");
        if (!(ret & PYEXEC_FORCED_EXIT) && ret != 0
            && pyexec_mode_kind == PYEXEC_MODE_FRIENDLY_REPL) {
            ret = pyexec_file_if_exists("main.py");
        }
        while (!(ret & PYEXEC_FORCED_EXIT)) {
            if (pyexec_mode_kind == PYEXEC_MODE_RAW_REPL) {
                ret = pyexec_raw_repl() != 0 ? PYEXEC_FORCED_EXIT : 0;
            } else {
                ret = pyexec_friendly_repl() != 0 ? PYEXEC_FORCED_EXIT : 0;
            }
        }
        mp_printf(&mp_plat_print, "MPY: soft reboot\n");
        gc_sweep_all();
        mp_deinit();
    }
}

// ---- machine.reset(): reboot the board instead of ending QEMU ------------------------------
// The port's machine.reset() calls exit(0), which ends QEMU through semihosting. exit(0)
// becomes a system reset request (SYSRESETREQ in the Cortex-M's AIRCR): QEMU resets the CPU
// and reloads the firmware image; memory outside the image, where the filesystem lives
// (_boot.py), keeps its contents, as a board's flash does. Any other status (a fatal error,
// e.g. nlr_jump_fail's exit(1)) still ends QEMU with that status.

#define SCB_AIRCR (*(volatile uint32_t *)0xE000ED0C)
#define SCB_AIRCR_SYSRESETREQ (0x05FA0004)

MP_NORETURN void __real_exit(int status);

MP_NORETURN void __wrap_exit(int status) {
    if (status == 0) {
        __asm volatile ("dsb");
        SCB_AIRCR = SCB_AIRCR_SYSRESETREQ;
        __asm volatile ("dsb");
        for (;;) {
        }
    }
    __real_exit(status);
}

// ---- machine.unique_id() ----------------------------------------------------------------
// Real boards have one (rp2: the flash chip's 8-byte id). Every emulated board has this id.

static mp_obj_t zeal_machine_unique_id(void) {
    return mp_obj_new_bytes((const byte *)"ZEALQEMU", 8);
}
MP_DEFINE_CONST_FUN_OBJ_0(zeal_machine_unique_id_obj, zeal_machine_unique_id);

// ---- file times ---------------------------------------------------------------------------
// littlefs stamps files with mp_hal_time_ns(). The board has no clock set from outside: time
// since boot, as on a board whose RTC was never set.

uint64_t mp_hal_time_ns(void) {
    return (uint64_t)mp_hal_ticks_ms() * 1000000ULL;
}

// ---- the UART: received by interrupt into a ring buffer; Ctrl-C while code runs --------------
// The port polls the emulated UART (a CMSDK APB UART holding one received byte) only when
// Python reads stdin: Ctrl-C could not stop running code, waiting spun the host's CPU, and
// the busy polling slowed reception. Here the UART's receive interrupt (IRQ 0 on
// mps2-an385) moves each byte into a ring buffer, as a real port's UART driver does; the
// interrupt character, when one is set (micropython.kbd_intr), schedules KeyboardInterrupt
// instead of being kept. Reads and sleeps wait in WFI. The port's vector table has the
// Cortex-M's 16 system entries only: a copy with the UART's entry added is installed (VTOR).

#define UART0_DATA (*(volatile uint32_t *)0x40004000)
#define UART0_STATE (*(volatile uint32_t *)0x40004004)
#define UART0_CTRL (*(volatile uint32_t *)0x40004008)
#define UART0_INTSTATUS (*(volatile uint32_t *)0x4000400C)
#define UART_STATE_RXFULL (1 << 1)
#define UART_CTRL_RX_INTEN (1 << 3)
#define UART_INT_RX (1 << 1)
#define UART0_RX_IRQ (0)
#define SCB_VTOR (*(volatile uint32_t *)0xE000ED08)
#define NVIC_ISER0 (*(volatile uint32_t *)0xE000E100)

#define RX_SIZE (1024)  // a power of two

static uint8_t rx_buf[RX_SIZE];
static volatile uint32_t rx_head;  // bytes put (by the interrupt)
static volatile uint32_t rx_tail;  // bytes taken

static void uart0_rx_irq(void) {
    UART0_INTSTATUS = UART_INT_RX;
    while (UART0_STATE & UART_STATE_RXFULL) {
        if (rx_head - rx_tail >= RX_SIZE) {
            // full: leave the byte in the UART and stop its interrupt until a byte is taken
            UART0_CTRL &= ~UART_CTRL_RX_INTEN;
            return;
        }
        int c = UART0_DATA & 0xff;
        if (c == mp_interrupt_char) {
            mp_sched_keyboard_interrupt();
        } else {
            rx_buf[rx_head % RX_SIZE] = (uint8_t)c;
            rx_head = rx_head + 1;
        }
    }
}

static void unused_irq(void) {
}

static uint32_t vectors[32] __attribute__((aligned(128)));

static void uart_rx_interrupt_init(void) {
    const uint32_t *now = (const uint32_t *)SCB_VTOR;
    for (int i = 0; i < 16; ++i) {
        vectors[i] = now[i];
    }
    for (int i = 16; i < 32; ++i) {
        vectors[i] = (uint32_t)&unused_irq;  // never enabled
    }
    vectors[16 + UART0_RX_IRQ] = (uint32_t)&uart0_rx_irq;
    __asm volatile ("dsb");
    SCB_VTOR = (uint32_t)vectors;
    __asm volatile ("dsb; isb");
    UART0_CTRL |= UART_CTRL_RX_INTEN;
    NVIC_ISER0 = 1 << UART0_RX_IRQ;
}

static int rx_take(void) {
    if (rx_head == rx_tail) {
        return -1;
    }
    int c = rx_buf[rx_tail % RX_SIZE];
    rx_tail = rx_tail + 1;
    UART0_CTRL |= UART_CTRL_RX_INTEN;  // on again if a full buffer had stopped it
    return c;
}

// Sleep until an interrupt (the UART's, or SysTick's every millisecond) unless `ready`
// already: checked with interrupts masked, so a byte that arrives meanwhile still wakes WFI.
static void wait_for_interrupt(bool rx_ready_ends) {
    __asm volatile ("cpsid i");
    if (!(rx_ready_ends && rx_head != rx_tail)) {
        __asm volatile ("wfi");
    }
    __asm volatile ("cpsie i");
}

int __wrap_mp_hal_stdin_rx_chr(void) {
    for (;;) {
        int c = rx_take();
        if (c >= 0) {
            return c;
        }
        mp_handle_pending(MP_HANDLE_PENDING_CALLBACKS_AND_EXCEPTIONS);
        wait_for_interrupt(true);
    }
}

uintptr_t __wrap_mp_hal_stdio_poll(uintptr_t poll_flags) {
    uintptr_t ret = 0;
    if ((poll_flags & MP_STREAM_POLL_RD) && rx_head != rx_tail) {
        ret |= MP_STREAM_POLL_RD;
    }
    if (poll_flags & MP_STREAM_POLL_WR) {
        ret |= MP_STREAM_POLL_WR;  // the UART takes every byte at once
    }
    return ret;
}

void __wrap_mp_hal_delay_ms(mp_uint_t ms) {
    mp_uint_t start = mp_hal_ticks_ms();
    for (;;) {
        mp_handle_pending(MP_HANDLE_PENDING_CALLBACKS_AND_EXCEPTIONS);
        if (mp_hal_ticks_ms() - start >= ms) {
            return;
        }
        wait_for_interrupt(false);
    }
}
