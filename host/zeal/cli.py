"""`zeal` command line: the commands are the table of zeal.commands; user mistakes print
`zeal: <message>` (one line, escaped), Ctrl-C `zeal: interrupted` (exit status 130) wherever
it comes, the imports of the commands included: so this module imports nothing else at its
top.

A Ctrl-C can surface as another error: a library that catches the KeyboardInterrupt raised
inside one of its imports and re-raises an ImportError (so "matplotlib is missing" when it is
not). The SIGINT handler main installs notes that the signal came, and any one-line error
after it is reported as the interruption it is. `console()` (the `zeal` script and `python -m
zeal`) also ignores a Ctrl-C that comes once the command has finished: the process is
exiting, and an interrupt in the interpreter's finalisation would print a traceback (or abort
in a library's thread) after the command's last word."""
import _thread
import signal
import sys
import threading


def main(argv=None) -> int:
    came = []

    def on_sigint(signum, frame):
        came.append(signum)
        if frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
            # an exception raised in the import system's lock callback is printed ("Exception
            # ignored in ...", a traceback) and dropped: deliver the interrupt again a moment
            # later, outside it
            threading.Timer(0.01, _thread.interrupt_main).start()
            return
        raise KeyboardInterrupt

    ours = threading.current_thread() is threading.main_thread() and \
        signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if ours:
        signal.signal(signal.SIGINT, on_sigint)
    try:
        from .errors import ZealError
        from .text import shown

        try:
            from .commands import build_parser

            args = build_parser().parse_args(argv)
            return args.func(args)
        except ZealError as exc:  # may quote a device's or a file's text: escaped
            if came:
                raise KeyboardInterrupt from None
            print("zeal: %s" % shown(str(exc)), file=sys.stderr)
            return 1
    except KeyboardInterrupt:
        print("zeal: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    finally:
        if ours:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def console() -> int:
    """The `zeal` console script: main(), then no Ctrl-C while the process exits."""
    status = main()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return status


if __name__ == "__main__":
    sys.exit(console())
