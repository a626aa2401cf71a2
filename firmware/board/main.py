# Board entry point: copy to the board's root as main.py (`zeal flash` does this).
# Streams Zeal reports as configured in zeal_config.json. To get back to the REPL: send the
# line "!stop" (`zeal stop --port PORT`), or reset and press Ctrl-C within start_delay_ms.
import zealfw.main

zealfw.main.boot()
