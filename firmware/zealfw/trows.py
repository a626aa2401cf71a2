"""One row of a compact table ("zeal-table/2", shared_spec/profile.md) written out as a dense
row: 4 big-endian bytes per cell into a caller's buffer, so that the checks
(zealfw.tprofile) and the sampler's cell scan (zealfw.tsample) read it as they read a dense
table's row. Its own module: the loader and the sampler are never in memory together.

lv: the levels, 8 bytes a cell (lo_j then hi_j); rb: the rows' records; o: row r's record
(a, b, k, then k times a cell and its 4 weight bytes). Cell j gets its exception's weight if
listed, else hi_j if a <= j < b, else lo_j. No allocation: bytes are copied one by one.
"""


def expand(lv, rb, o, n, buf):
    a = rb[o]
    b = rb[o + 1]
    k = rb[o + 2]
    j = 0
    while j < n:
        s = (j << 3) + 4 if a <= j < b else j << 3
        d = j << 2
        buf[d] = lv[s]
        buf[d + 1] = lv[s + 1]
        buf[d + 2] = lv[s + 2]
        buf[d + 3] = lv[s + 3]
        j += 1
    o += 3
    while k:
        d = rb[o] << 2
        buf[d] = rb[o + 1]
        buf[d + 1] = rb[o + 2]
        buf[d + 2] = rb[o + 3]
        buf[d + 3] = rb[o + 4]
        o += 5
        k -= 1


def word(w, i):
    # weight i of a dense table or a written-out row: 4 big-endian bytes, read in place
    i <<= 2
    return (w[i] << 24) | (w[i + 1] << 16) | (w[i + 2] << 8) | w[i + 3]
