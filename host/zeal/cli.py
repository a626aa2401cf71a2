"""`zeal` command line: the commands are the table of zeal.commands; user mistakes print
`zeal: <message>` (one line, escaped), Ctrl-C `zeal: interrupted`."""
import sys

from .commands import build_parser
from .errors import ZealError
from .text import shown


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
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
