#!/usr/bin/env python3
"""tiny_compiler.py: a complete small compiler for pimdiff's cases, written from its docs.

It lowers one conv2d or MVM case (docs/case-format.md) onto the PIMSim crossbar machine
(docs/isa.md) and writes a bundle (docs/reference/bundle-format.md). It is the compiler that
docs/guide/your-compiler.md walks through, and pimdiff's CI hunts it: a clean hunt finds
nothing, and its bug switch gives exactly one finding.

    python3 tiny_compiler.py CASE_DIR OUT_DIR      # one case: exit 0, 3 (declined) or 1
    python3 tiny_compiler.py --serve               # pimdiff's persistent protocol

    pimdiff hunt --cases 300 --compiler-cmd 'python3 python/examples/tiny_compiler.py {case} {out}'
    pimdiff hunt --cases 300 --compiler-protocol serve \\
        --compiler-cmd 'exec python3 python/examples/tiny_compiler.py --serve'

The bug switch, `--bug store-off-by-one` (or TINY_BUG=store-off-by-one in the environment),
makes one store of the program, the first output store, write one int32 element (4 bytes)
past where it should.

The lowering, in four steps:

1. **Tiling (im2col).** Each group `g` of a convolution is a matrix product: the weight as a
   matrix `W_g` of `Cg*kh*kw` rows (the kernel window, ordered (i, j, channel)) by `Kg` columns
   (output channels), times one window of the input per output pixel. `W_g` is cut into tiles
   of at most `array_rows` x `array_cols`; each tile with a nonzero weight is one crossbar
   array. An MVM is the 1x1 convolution of N one-pixel images.
2. **Placement.** Tiles fill core 0's arrays, then core 1's, and so on. A case whose tiles do
   not fit the chip is declined with a claim pimdiff checks ("not enough crossbar arrays: N
   needed, M available", compared with cores x arrays_per_core).
3. **Code.** Every core computes, for every output pixel, each of its tiles' partial sums
   (gather the window's rows with `ld`/`lldi`, one `mvmul`) and stores them in a scratch area
   of global memory. The core that holds a column chunk's first tile owns that chunk: it waits
   (`wait`) until every other core that contributed has signalled (`sync`), then adds the
   partial sums, the bias and the ReLU (`vvadd`, `vrelu` at 32 bits) and stores the output.
4. **Bundle.** `config.json`, one `core_<i>.json` per core, `xbars/core_<i>.{npy,json}` for the
   cores with arrays, `io.json` (input NHWC int8, output NHWC int32, the bias as a constant
   segment) and `bias.bin`.
"""

import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

UNSUPPORTED_EXIT = 3
"""The exit status by which a compiler declines a case (the bundle protocol)."""


class Unsupported(Exception):
    """This compiler declines the case; the message is the reason pimdiff records."""


# ---------------------------------------------------------------------------------------------
# Reading the case (docs/case-format.md).


class Problem:
    """The case as a grouped, padded, strided, dilated convolution over NHWC data."""

    def __init__(self, case_dir):
        with open(os.path.join(case_dir, "case.json")) as f:
            spec = json.load(f)
        if spec.get("format") != 1:
            raise ValueError("case.json: format %r, this compiler reads format 1" % spec.get("format"))
        op = spec["op"]
        arch = spec["arch"]
        self.cores = arch["cores"]
        self.arrays_per_core = arch["arrays_per_core"]
        self.array_rows = arch["array_rows"]
        self.array_cols = arch["array_cols"]
        self.local_memory_bytes = arch["local_memory_bytes"]
        self.arch = arch
        x = np.load(os.path.join(case_dir, "input.npy"))
        w = np.load(os.path.join(case_dir, "weight.npy"))
        self.bias = np.load(os.path.join(case_dir, "bias.npy")) if op["bias"] else None
        self.relu = op["relu"]
        self.mvm = op["kind"] == "mvm"
        if self.mvm:
            # [N, in] as N one-pixel images of `in` channels; W[out, in] as a 1x1 kernel.
            self.n, self.c = x.shape
            self.h = self.w = 1
            self.k = w.shape[0]
            self.kh = self.kw = 1
            self.sh = self.sw = self.dh = self.dw = 1
            self.pt = self.pl = self.pb = self.pr = 0
            self.groups = 1
            weight = w.reshape(self.k, self.c, 1, 1)
            self.input_shape = [self.n, self.c]
            self.output_shape = [self.n, self.k]
            self.layout = "nc"
        else:
            self.n, self.c, self.h, self.w = x.shape
            self.k = op["out_channels"]
            self.kh, self.kw = op["kernel"]
            self.sh, self.sw = op["stride"]
            self.dh, self.dw = op["dilation"]
            self.pt, self.pl, self.pb, self.pr = op["padding"]
            self.groups = op["groups"]
            weight = w
            self.layout = "nhwc"
        self.cg = self.c // self.groups
        self.kg = self.k // self.groups
        self.oh = (self.h + self.pt + self.pb - self.dh * (self.kh - 1) - 1) // self.sh + 1
        self.ow = (self.w + self.pl + self.pr - self.dw * (self.kw - 1) - 1) // self.sw + 1
        if not self.mvm:
            self.input_shape = [self.n, self.c, self.h, self.w]
            self.output_shape = [self.n, self.k, self.oh, self.ow]
        # The input in NHWC (a pixel's channels together), as the io manifest declares it.
        self.x_nhwc = x.reshape(self.n, self.c, self.h, self.w).transpose(0, 2, 3, 1)
        # W_g[(i, j, ch), kcol] = weight[g*Kg + kcol, ch, i, j]
        self.rows = self.cg * self.kh * self.kw
        self.matrices = [
            weight[g * self.kg:(g + 1) * self.kg].transpose(2, 3, 1, 0).reshape(self.rows, self.kg)
            for g in range(self.groups)
        ]

    def pixels(self):
        """Every output pixel (n, oh, ow), in NHWC order."""
        for n in range(self.n):
            for oh in range(self.oh):
                for ow in range(self.ow):
                    yield n, oh, ow

    def window_rows(self, g, n, oh, ow, r0, r1):
        """The input bytes of rows r0..r1 of group g's window at (n, oh, ow), as segments:
        ("gmem", element index into the NHWC input, length) or ("zero", length)."""
        segments = []
        r = r0
        while r < r1:
            pos, ch = divmod(r, self.cg)
            i, j = divmod(pos, self.kw)
            length = min(self.cg - ch, r1 - r)
            ih = oh * self.sh - self.pt + i * self.dh
            iw = ow * self.sw - self.pl + j * self.dw
            if 0 <= ih < self.h and 0 <= iw < self.w:
                at = ((n * self.h + ih) * self.w + iw) * self.c + g * self.cg + ch
                segments.append(("gmem", at, length))
            else:
                segments.append(("zero", length))
            r += length
        return segments


# ---------------------------------------------------------------------------------------------
# Tiling and placement.


class Tile:
    """One crossbar array's share of a weight matrix: rows r0..r1, columns c0..c1 of W_g."""

    def __init__(self, g, row_tile, col_tile, r0, r1, c0, c1, cells):
        self.g, self.row_tile, self.col_tile = g, row_tile, col_tile
        self.r0, self.r1, self.c0, self.c1 = r0, r1, c0, c1
        self.cells = cells
        self.core = self.array = None


def tile(p):
    """The tiles of every group (all-zero tiles are left out: they add nothing) and the
    column chunks (g, col_tile) with the tiles that add into each."""
    tiles, chunks = [], {}
    for g, m in enumerate(p.matrices):
        for ct, c0 in enumerate(range(0, p.kg, p.array_cols)):
            c1 = min(c0 + p.array_cols, p.kg)
            chunks[(g, ct)] = []
            for rt, r0 in enumerate(range(0, p.rows, p.array_rows)):
                r1 = min(r0 + p.array_rows, p.rows)
                cells = m[r0:r1, c0:c1]
                if not cells.any():
                    continue
                t = Tile(g, rt, ct, r0, r1, c0, c1, cells)
                tiles.append(t)
                chunks[(g, ct)].append(t)
    return tiles, chunks


def place(p, tiles):
    """Tiles on cores in order, filling each core's arrays; declines a case that needs more
    arrays than the chip has."""
    capacity = p.cores * p.arrays_per_core
    if len(tiles) > capacity:
        raise Unsupported("not enough crossbar arrays: %d needed, %d available" % (len(tiles), capacity))
    for i, t in enumerate(tiles):
        t.core, t.array = divmod(i, p.arrays_per_core)


# ---------------------------------------------------------------------------------------------
# Code generation.


class Core:
    """One core's instruction stream, written as JSON text (docs/isa.md's instruction objects)."""

    def __init__(self):
        self.lines = []

    def emit(self, text):
        self.lines.append(text)

    def sldi(self, rd, imm):
        self.emit('{"op": "sldi", "rd": %d, "imm": %d}' % (rd, imm))

    def setbw(self, ibiw, obiw):
        self.emit('{"op": "setbw", "ibiw": %d, "obiw": %d}' % (ibiw, obiw))

    def ld(self, lmem, gmem, size):
        """LMem[lmem..+size] = GMem[gmem..+size]."""
        self.sldi(1, lmem)
        self.sldi(2, gmem)
        self.emit('{"op": "ld", "rd": 1, "rs1": 2, "size": %d}' % size)

    def st(self, gmem, lmem, size):
        """GMem[gmem..+size] = LMem[lmem..+size]."""
        self.sldi(1, gmem)
        self.sldi(2, lmem)
        self.emit('{"op": "st", "rd": 1, "rs1": 2, "size": %d}' % size)

    def zero(self, lmem, size):
        self.sldi(1, lmem)
        self.emit('{"op": "lldi", "rd": 1, "imm": 0, "len": %d}' % size)

    def mvmul(self, out, inp, group):
        self.sldi(1, out)
        self.sldi(2, inp)
        self.emit('{"op": "mvmul", "rd": 1, "rs1": 2, "mbiw": 8, "relu": 0, "group": %d}' % group)

    def vvadd(self, dst, a, b, length):
        self.sldi(1, dst)
        self.sldi(2, a)
        self.sldi(3, b)
        self.emit('{"op": "vvadd", "rd": 1, "rs1": 2, "rs2": 3, "len": %d}' % length)

    def vrelu(self, dst, length):
        self.sldi(1, dst)
        self.emit('{"op": "vrelu", "rd": 1, "rs1": 1, "len": %d}' % length)

    def text(self):
        return "[\n" + ",\n".join(self.lines) + "\n]\n"


class Layout:
    """Where everything lives in global memory (GMem) and in each core's local memory."""

    def __init__(self, p, tiles):
        x_bytes = p.n * p.h * p.w * p.c
        y_bytes = p.n * p.oh * p.ow * p.k * 4
        self.pixels = p.n * p.oh * p.ow
        self.input = 0
        self.output = align(self.input + x_bytes)
        self.bias = align(self.output + y_bytes)
        self.scratch = align(self.bias + (p.k * 4 if p.bias is not None else 0))
        self.slot = p.array_cols * 4
        # Local memory, reused between the two phases: the window and the mvmul result while
        # partial sums are computed, then the accumulator and one operand while they are added.
        self.window = 0
        self.product = p.array_rows
        self.acc = 0
        self.partial = self.slot
        self.local_end = max(self.product + self.slot, 2 * self.slot)
        if self.local_end > p.local_memory_bytes:
            raise Unsupported(
                "local memory: %d needed, %d available" % (self.local_end, p.local_memory_bytes))
        self.tile_index = {id(t): i for i, t in enumerate(tiles)}

    def partial_slot(self, t, pixel):
        """The GMem address of tile t's partial sums of output pixel `pixel`."""
        return self.scratch + (self.tile_index[id(t)] * self.pixels + pixel) * self.slot

    def output_at(self, p, pixel, g, c0):
        """The GMem address of output channel g*Kg + c0 of output pixel `pixel` (NHWC)."""
        return self.output + (pixel * p.k + g * p.kg + c0) * 4


def align(n, to=16):
    return (n + to - 1) // to * to


def partial_sums(p, lay, core, tiles):
    """Every tile of this core, every output pixel: gather the window rows, mvmul, store."""
    core.setbw(8, 32)
    for t in tiles:
        for pixel, (n, oh, ow) in enumerate(p.pixels()):
            at = lay.window
            for seg in p.window_rows(t.g, n, oh, ow, t.r0, t.r1):
                if seg[0] == "gmem":
                    core.ld(at, lay.input + seg[1], seg[2])
                    at += seg[2]
                else:
                    core.zero(at, seg[1])
                    at += seg[1]
            core.mvmul(lay.product, lay.window, t.array)
            core.st(lay.partial_slot(t, pixel), lay.product, (t.c1 - t.c0) * 4)


def reduce_chunks(p, lay, core, owned, waits, bug):
    """The chunks this core owns: wait for the other cores' partial sums, add them, the bias
    and the ReLU, store the output."""
    if not owned:
        return
    if waits:
        core.emit('{"op": "wait", "event_register": 0, "wait_value": %d}' % waits)
    core.setbw(32, 32)
    for (g, ct), chunk in owned:
        c0 = ct * p.array_cols
        cols = min(p.array_cols, p.kg - c0)
        for pixel in range(lay.pixels):
            if chunk:
                core.ld(lay.acc, lay.partial_slot(chunk[0], pixel), cols * 4)
            else:
                core.zero(lay.acc, cols * 4)
            for t in chunk[1:]:
                core.ld(lay.partial, lay.partial_slot(t, pixel), cols * 4)
                core.vvadd(lay.acc, lay.acc, lay.partial, cols)
            if p.bias is not None:
                core.ld(lay.partial, lay.bias + (g * p.kg + c0) * 4, cols * 4)
                core.vvadd(lay.acc, lay.acc, lay.partial, cols)
            if p.relu:
                core.vrelu(lay.acc, cols)
            out = lay.output_at(p, pixel, g, c0)
            if bug == "store-off-by-one" and (g, ct, pixel) == (0, 0, 0):
                out += 4  # the bug: the first output store lands one int32 element too far
            core.st(out, lay.acc, cols * 4)


def generate(p, tiles, chunks, bug):
    """The program of every core."""
    lay = Layout(p, tiles)
    cores = [Core() for _ in range(p.cores)]
    # The owner of a chunk is the core of its first tile (core 0 for a chunk of zeros).
    owner = {key: (chunk[0].core if chunk else 0) for key, chunk in chunks.items()}
    for c, core in enumerate(cores):
        partial_sums(p, lay, core, [t for t in tiles if t.core == c])
    # Each core tells each owner it contributed to that its partial sums are in GMem.
    waits = [0] * p.cores
    for c, core in enumerate(cores):
        told = sorted({owner[(t.g, t.col_tile)] for t in tiles if t.core == c} - {c})
        for o in told:
            core.emit('{"op": "sync", "event_register": 0, "core": %d}' % o)
            waits[o] += 1
    for c, core in enumerate(cores):
        owned = [(key, chunk) for key, chunk in sorted(chunks.items()) if owner[key] == c]
        reduce_chunks(p, lay, core, owned, waits[c], bug)
    return lay, cores


# ---------------------------------------------------------------------------------------------
# Writing the bundle (docs/reference/bundle-format.md).


def write_bundle(p, tiles, lay, cores, out_dir):
    config = {
        "core_cnt": p.cores,
        # The architecture compiled for: it must be the case's (pimdiff checks it).
        "arch": {
            "arrays_per_core": p.arrays_per_core,
            "array_rows": p.array_rows,
            "array_cols": p.array_cols,
            "local_memory_bytes": p.local_memory_bytes,
        },
    }
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config, f)
    for c, core in enumerate(cores):
        with open(os.path.join(out_dir, "core_%d.json" % c), "w") as f:
            f.write(core.text())
    xbars = os.path.join(out_dir, "xbars")
    os.mkdir(xbars)
    for c in range(p.cores):
        mine = [t for t in tiles if t.core == c]
        if not mine:
            continue
        cells = np.zeros((p.arrays_per_core, p.array_rows, p.array_cols), dtype=np.int8)
        groups = []
        for t in mine:
            cells[t.array, :t.r1 - t.r0, :t.c1 - t.c0] = t.cells
            groups.append({"group": t.array, "arrays": [t.array],
                           "rows": t.r1 - t.r0, "cols": t.c1 - t.c0})
        np.save(os.path.join(xbars, "core_%d.npy" % c), cells)
        with open(os.path.join(xbars, "core_%d.json" % c), "w") as f:
            json.dump({"core": c, "mbiw": 8, "groups": groups}, f)
    io = {
        "input": {"addr": lay.input, "shape": p.input_shape, "layout": p.layout, "dtype": "int8"},
        "output": {"addr": lay.output, "shape": p.output_shape, "layout": p.layout,
                   "dtype": "int32"},
        "constants": [],
    }
    if p.bias is not None:
        # Raw little-endian int32 bytes, loaded at `addr` before the run.
        with open(os.path.join(out_dir, "bias.bin"), "wb") as f:
            f.write(p.bias.astype("<i4").tobytes())
        io["constants"].append({"name": "bias", "addr": lay.bias, "file": "bias.bin"})
    with open(os.path.join(out_dir, "io.json"), "w") as f:
        json.dump(io, f)


def compile_case(case_dir, out_dir, bug=None):
    """Compiles the case in case_dir into a bundle in out_dir (raises Unsupported to decline)."""
    p = Problem(case_dir)
    tiles, chunks = tile(p)
    place(p, tiles)
    lay, cores = generate(p, tiles, chunks, bug)
    write_bundle(p, tiles, lay, cores, out_dir)


# ---------------------------------------------------------------------------------------------
# The command line: one case per process, or the persistent protocol.


def main(argv):
    args = list(argv)
    bug = os.environ.get("TINY_BUG") or None
    if "--bug" in args:
        i = args.index("--bug")
        bug = args[i + 1]
        del args[i:i + 2]
    if bug not in (None, "store-off-by-one"):
        print("tiny_compiler: unknown --bug %r (known: store-off-by-one)" % bug, file=sys.stderr)
        return 2
    if args == ["--serve"]:
        sys.path.insert(0, os.path.join(HERE, ".."))
        import pimdiff_serve

        def served(case_dir, out_dir):
            try:
                compile_case(case_dir, out_dir, bug)
            except Unsupported as e:
                raise pimdiff_serve.Unsupported(str(e))

        return pimdiff_serve.serve(served, frames_root=HERE)
    if len(args) != 2:
        print("usage: tiny_compiler.py [--bug store-off-by-one] (CASE_DIR OUT_DIR | --serve)",
              file=sys.stderr)
        return 2
    try:
        compile_case(args[0], args[1], bug)
    except Unsupported as e:
        print(e, file=sys.stderr)
        return UNSUPPORTED_EXIT
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
