"""`zeal` command line: the commands are the table of zeal.commands; user mistakes print
`zeal: <message>` (one line, escaped), Ctrl-C `zeal: interrupted` (exit status 130) wherever
it comes, the imports of the commands included: so this module imports nothing else at its
top."""
import sys


def main(argv=None) -> int:
    try:
        from .errors import ZealError
        from .text import shown

        try:
            from .commands import build_parser

            args = build_parser().parse_args(argv)
            return args.func(args)
        except ZealError as exc:  # may quote a device's or a file's text: escaped
            print("zeal: %s" % shown(str(exc)), file=sys.stderr)
            return 1
    except KeyboardInterrupt:
        print("zeal: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
