"""The multi-attribute sampler on the device (shared_spec/multi.md, the report's word
contract): integers only, word for word the host reference
(host/zeal/mechanism/multi/profile.py, MultiSampler), and the Sender of its
variable-length reports.

    perm = [0..d-1]; for i in 0..k-1: r = i + UNIFORM(d - i); swap perm[i], perm[r]
    S = sorted(perm[0:k])
    for j in S ascending:
      grid attribute:  y_j = the grid sampler's offset (zealfw.mechanism.Zeal)
      table attribute: y_j = the table sampler's cell (zealfw.tsample.Zeal)
      OUE attribute:   bit_v = BERNOULLI(1, 2) if v == x_j else
                       BERNOULLI(2^32, ratio_num + 2^32), v = 0..c-1; y_j = sum bit_v << v
An invalid value (a bad type or field, NaN, an infinity, a raw count without calibration)
is replaced by its attribute's midpoint (numeric) or 0 (categorical). Every numeric
attribute's sampler shares the one word cursor. The report is the k pairs (j, y_j),
ascending j; on the wire (Sender.add) each pair is the index in ceil(log2 d) bits, then
y_j in the attribute's bits (c for OUE), appended least significant bit first as the
single-attribute packer appends an m-bit report. HELLO announces bits = 0; a DATA frame
holds at most min(batch, 13264 // longest report) reports (MAX_BODY).
"""
from . import wire, mechanism
from .bern import Bern

_ONE = 1 << 32


class _F:
    pass


class Zeal:
    """A multi profile's sampler. `profile.fields`: zealfw.mprofile.from_doc's fields.
    zealfw.main's loop calls perturb_raw(source) with the tuple source (perturb(None, None)
    when the source failed: every value invalid); low(r) is the sampler itself, which the
    Sender reads (sel, val: the report's pairs; _w: the value widths; _ib)."""

    reports = 1  # wire reports a sampling tick (zealfw.main's loop)

    def __init__(self, profile, words):
        d, k, ib, attrs, bits, fp = profile.fields
        if not hasattr(words, "advance"):  # a callable (zealfw.callwords)
            from .callwords import CallWords

            words = CallWords(getattr(words, "next", words))
        self.words = words
        parts = []
        widths = []
        names = ("lo", "hi", "n_cells", "n_window", "threshold", "k_lo", "exponent", "bits",
                 "cal", "fingerprint", "table")
        for a in attrs:
            if len(a) == 2:  # OUE: (c, BERNOULLI(1/2), BERNOULLI(2^32 / (ratio_num + 2^32)))
                parts.append((None, a[0], Bern(1, 2),
                              Bern(_ONE, a[1] + _ONE)))
                widths.append(a[0])
                continue
            f = _F()
            for i in range(11):
                setattr(f, names[i], a[i])
            if a[10] is None:
                z = mechanism.Zeal(f, words)
            else:
                from .tsample import Zeal as T

                z = T(f, words)
            lon, lod = a[0]
            hin, hid = a[1]
            parts.append((z, lon * hid + hin * lod, 2 * lod * hid, a[5]))
            widths.append(a[7])
        self._p = parts
        self._w = widths
        self._ib = ib
        us = []
        for i in range(k):
            us.append(mechanism.Uniform(d - i))
        self._us = us
        self._perm = bytearray(range(d))
        self.sel = bytearray(k)
        self.val = [0] * k

    @property
    def clamped(self):
        n = 0
        for p in self._p:
            if p[0] is not None:
                n += p[0].clamped
        return n

    def low(self, r):
        return r

    def perturb(self, n, d):
        return self.perturb_raw(None)

    def perturb_raw(self, src):
        """One report for the tuple source src (None: every value invalid): the pairs in
        self.sel / self.val."""
        words = self.words
        perm = self._perm
        sel = self.sel
        k = len(sel)
        us = self._us
        for i in range(k):
            r = i + us[i].draw(words)
            c = perm[r]
            perm[r] = perm[i]
            perm[i] = c
        for i in range(k):  # S = sorted(perm[0:k]): insertion sort of k <= 16 small ints
            c = perm[i]
            j = i
            while j and sel[j - 1] > c:
                sel[j] = sel[j - 1]
                j -= 1
            sel[j] = c
        for i in range(len(perm)):
            perm[i] = i
        val = self.val
        for i in range(k):
            j = sel[i]
            p = self._p[j]
            kind = -1 if src is None else src.kinds[j]
            z = p[0]
            if z is None:  # OUE
                c = p[1]
                x = src.vals[j] if kind == 0 else 0
                if not 0 <= x < c:
                    x = 0
                y = 0
                half, other = p[2], p[3]
                for v in range(c):
                    if v == x:
                        b = half.draw(words)
                    else:
                        b = other.draw(words)
                    y |= b << v
                val[i] = y
                continue
            y = -1
            try:
                if kind == 2:
                    y = z.perturb_f64(src.vals[j], src.los[j]) - p[3]
                elif kind == 1:
                    y = z.perturb_f32(src.vals[j], src.los[j]) - p[3]
                elif kind == 0:
                    y = z.perturb_raw(src.vals[j]) - p[3]
            except mechanism.ReadingError:
                y = -1
            if y < 0:  # invalid: the attribute's midpoint (lo + hi)/2
                y = z.sample(p[1], p[2])
            val[i] = y
        return self

    perturb_f32 = perturb_raw  # bound by zealfw.main's loop; a tuple source's kind is 0
    perturb_f64 = perturb


class Sender(wire.Sender):
    """wire.Sender for variable-length reports: `bits` is the longest report's (it sizes
    the buffers and caps the batch at 13264 // bits, MAX_BODY); HELLO says bits = 0;
    add(sampler) packs the sampler's report."""

    def __init__(self, stream, bits, **kw):
        batch = kw["batch"]
        if batch * bits > 13264:
            batch = 13264 // bits
            kw["batch"] = batch
        wire.Sender.__init__(self, stream, 1, **kw)
        self._hello[37] = 0  # bits = 0: the decoder splits reports with the profile
        from .wire_setup import max_encoded_length

        body = 4 + (batch * bits + 7) // 8
        self._body = bytearray(body + 4)
        self._enc = bytearray(max_encoded_length((body if body > 218 else 218) + 4) + 2)

    def add(self, z):
        """Pack one report (the sampler z's pairs); True when the batch is now full."""
        if self._count >= self.batch:
            self.flush()
        ib = z._ib
        w = z._w
        sel = z.sel
        val = z.val
        for i in range(len(sel)):
            j = sel[i]
            self._put(j, ib)
            self._put(val[i], w[j])
        self._count += 1
        return self._count >= self.batch

    def _put(self, low, m):
        # append the m-bit value low at the bit position, least significant bit first, as
        # wire.Sender.add appends a report (whole bytes written fresh: no clearing)
        if not m:
            return
        b = self._body
        p = self._bitpos
        i = 4 + (p >> 3)
        s = p & 7
        if s:
            b[i] |= (low & (0xFF >> s)) << s
        else:
            b[i] = low & 0xFF
        left = m - 8 + s
        low >>= 8 - s
        while left > 0:
            i += 1
            b[i] = low & 0xFF
            low >>= 8
            left -= 8
        self._bitpos = p + m
