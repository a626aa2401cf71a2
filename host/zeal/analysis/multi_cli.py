"""`zeal profile --attributes`: a multi-attribute profile (zeal-multi/1) from --attribute and
--categorical, and the figures it prints."""
import decimal
import sys
from fractions import Fraction

from ..errors import ProfileError, ZealError
from ..mechanism.multi import profile as MP
from ..mechanism.multi.mechanism import Categorical, Numeric, float_or_none


def parse_attribute(text: str):
    """NAME:LO:HI[:MECH[:BITS]] -> multi.Numeric (MECH grid or a table kind, BITS an int or
    auto)."""
    parts = text.split(":")
    if not 3 <= len(parts) <= 5:
        raise ProfileError("--attribute %r: give NAME:LO:HI[:MECH[:BITS]]" % text)
    name = parts[0]
    try:
        lo, hi = float(parts[1]), float(parts[2])
    except ValueError:
        raise ProfileError("--attribute %r: LO and HI must be numbers" % text) from None
    mech = parts[3] if len(parts) > 3 and parts[3] else "grid"
    bits = "auto"
    if len(parts) > 4 and parts[4] not in ("", "auto"):
        try:
            bits = int(parts[4])
        except ValueError:
            raise ProfileError("--attribute %r: BITS must be an integer or auto" % text) from None
    return Numeric(name, lo, hi, bits=bits, mechanism=mech)


def parse_categorical(text: str):
    """NAME:C -> multi.Categorical with c values (2..63)."""
    name, sep, c = text.partition(":")
    if not sep or not c.isdigit():
        raise ProfileError("--categorical %r: give NAME:C (C values, 2 to 63)" % text)
    return Categorical(name, int(c))


def sci(value, digits: int = 6) -> str:
    """A rational in "%.<digits>g" style: its float64's where float64 holds it, else from the
    exact value (a variance of 1e600 prints as 1e+600, not inf)."""
    value = Fraction(value)
    f = float_or_none(value)
    if f is not None and (value == 0 or abs(f) >= sys.float_info.min):   # not subnormal
        return "%.*g" % (digits, f)
    with decimal.localcontext() as ctx:
        ctx.prec = digits
        q = decimal.Decimal(value.numerator) / decimal.Decimal(value.denominator)
    return format(q.normalize(), ".%dg" % digits)   # normalize: no trailing zeros, as %g


def profile_figures(prof) -> dict:
    """What `zeal profile --attributes` prints: the header, each attribute, the report size.
    worst_variance: the worst-case variance of one report's estimate of the attribute
    (multi.worst_variance_bounds' upper end: the exact maximum, or for a grid of more than
    EXACT_STEPS window positions an exact upper bound of it) as a float64, null where float64
    cannot hold it (a numeric attribute's is about (hi - lo)^2: past 1.8e308 for ranges wider
    than about 1e154); worst_variance_rational: the same figure exactly, as "p/q"."""
    m = prof.multi()
    atts = []
    for j, (name, a) in enumerate(zip(prof.names, prof.attributes)):
        var = m.worst_variance_bounds(j)[1]
        doc = {"name": name, "kind": "categorical" if a.kind == "oue" else a.kind,
               "value_bits": prof.value_bits(j), "worst_variance": float_or_none(var),
               "worst_variance_rational": "%d/%d" % (var.numerator, var.denominator)}
        if a.kind == "oue":
            doc.update(values=a.c, ratio=a.ratio_num / (1 << 32))
        else:
            doc.update(lo=a.lo, hi=a.hi, epsilon=a.epsilon, fingerprint=a.fingerprint)
        atts.append(doc)
    return {"fingerprint": prof.fingerprint, "epsilon": prof.epsilon, "d": prof.d, "k": prof.k,
            "index_bits": prof.index_bits, "max_report_bits": prof.max_report_bits(),
            "max_batch": prof.max_batch(), "privacy_ratio": float(m.privacy_ratio()),
            "attributes": atts}


def cmd_profile_attributes(args) -> int:
    """`zeal profile --attributes`: build a multi profile from --attribute/--categorical."""
    import json

    specs = [parse_attribute(t) if kind == "a" else parse_categorical(t)
             for kind, t in getattr(args, "multi_specs", None) or ()]
    if not specs:
        raise ZealError("--attributes needs at least one --attribute NAME:LO:HI[:MECH[:BITS]] "
                        "or --categorical NAME:C")
    prof = MP.build(specs, args.epsilon, k=args.k)
    doc = profile_figures(prof)
    if args.output:
        if args.output == "-":
            raise ZealError("a multi profile is several files: give -o FILE.json")
        doc["files"] = prof.write(args.output)
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        for key in ("fingerprint", "epsilon", "d", "k", "index_bits", "max_report_bits",
                    "max_batch", "privacy_ratio"):
            print("%-16s %s%s" % (key, doc[key], " bits" if key.endswith("bits") else ""))
        for a in doc["attributes"]:
            print("attribute %-16s %-11s %2d bits  worst variance %s%s"
                  % (a["name"], a["kind"], a["value_bits"],
                     sci(Fraction(a["worst_variance_rational"])),
                     " (frequency^2)" if a["kind"] == "categorical" else " (unit^2)"))
        for path in doc.get("files", []):
            print("written to %s" % path)
    return 0
