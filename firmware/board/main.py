# Board entry point: copy to the board's root as main.py (`zeal flash` does this).
# Streams Zeal reports as configured in zeal_config.json. To get back to the REPL: send the
# line "!stop" (`zeal stop --port PORT`), or reset and press Ctrl-C within start_delay_ms.
# With a watchdog running, "!stop" leaves the file zeal_hold and resets the board; boot()
# then removes the file and returns, so the board stays in the REPL (mpremote, `zeal flash`).
import zealfw.main

zealfw.main.boot()
