#!/usr/bin/env python3
"""pimdiff's driver of CIM-MLC (snapshot b81e62b): runs CIM-MLC's own main.main in-process on a
case directory and writes its meta-operator flows (byte for byte what main.py writes) and
layout.json (CIM-MLC's in-memory state, LAYOUT.md).

    TREE/bin/cim-mlc-serve                               # pimdiff's serve protocol, version 1
    TREE/python TREE/driver/driver.py --case DIR --out DIR   # one case, for humans
    python3 targets/cim-mlc/driver/driver.py --tree TREE --case DIR --out DIR   # from the repo

TREE is what scripts/build-cim-mlc.sh prints. README.md beside this file describes the case
directory, the answers and the tree; LAYOUT.md describes layout.json and how to reproduce a case
with CIM-MLC's own main.py.
"""

import os

# Pinned before numpy, torch and onnxruntime are imported: their thread pools read these once.
THREAD_ENV = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
}
os.environ.update(THREAD_ENV)

import argparse  # noqa: E402
import copy  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import runpy  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402

HERE = os.path.dirname(os.path.realpath(__file__))
TREE_KIND = "pimdiff-cim-mlc-tree"
TREE_FORMAT = 1
BUILD_HINT = "build one with scripts/build-cim-mlc.sh and pass the path it prints on its last line"

# The classes main.main instantiates (main.py:50-94), recorded as they are made.
RECORDED = ("CoreVirtualMapping", "CoreWiseDuper", "CoreWisePipeline", "AddrGenerator",
            "CoreWiseCodegen", "CrossbarWiseDup", "CrossbarWiseCodegen", "RowWisePipeline",
            "RCWiseCodegen")


def _import_serve():
    for d in (HERE, os.path.join(HERE, "..", "..", "..", "python")):
        if os.path.isfile(os.path.join(d, "pimdiff_serve.py")):
            sys.path.insert(0, os.path.realpath(d))
            import pimdiff_serve
            return pimdiff_serve
    sys.exit("cim-mlc driver: pimdiff_serve.py is neither beside the driver nor in the "
             "repository's python/ (%s)" % HERE)


pimdiff_serve = _import_serve()


class CaseError(Exception):
    """A case directory the driver cannot read (pimdiff's fault, not CIM-MLC's)."""


class TreeError(Exception):
    """A directory that is not a tree of scripts/build-cim-mlc.sh."""


class DriverError(Exception):
    """The driver failed after CIM-MLC succeeded (writing layout.json): the driver's fault."""


def read_manifest(tree):
    """TREE's manifest.json, checked to be a tree of scripts/build-cim-mlc.sh."""
    path = os.path.join(tree, "manifest.json")
    try:
        with open(path) as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        raise TreeError("%s is not a CIM-MLC tree of scripts/build-cim-mlc.sh (%s): %s"
                        % (tree, e, BUILD_HINT))
    if not isinstance(manifest, dict) or manifest.get("kind") != TREE_KIND:
        raise TreeError("%s is not a CIM-MLC tree of scripts/build-cim-mlc.sh (manifest.json's "
                        "kind is not %r): %s" % (tree, TREE_KIND, BUILD_HINT))
    if manifest.get("format") != TREE_FORMAT:
        raise TreeError("%s is a CIM-MLC tree of format %r; this driver reads format %d: rebuild "
                        "it with scripts/build-cim-mlc.sh" % (tree, manifest.get("format"), TREE_FORMAT))
    if not os.path.isfile(os.path.join(tree, "src", "main.py")):
        raise TreeError("%s has no src/main.py: %s" % (tree, BUILD_HINT))
    return manifest


def find_tree(arg):
    """The tree: --tree, else $CIM_MLC_DIR, else the directory holding this driver's copy."""
    for candidate in (arg, os.environ.get("CIM_MLC_DIR")):
        if candidate:
            return os.path.realpath(candidate)
    parent = os.path.dirname(HERE)
    if os.path.isfile(os.path.join(parent, "manifest.json")):
        return parent
    raise TreeError("no CIM-MLC tree given: pass --tree TREE or set CIM_MLC_DIR; " + BUILD_HINT)


def read_case(case_dir):
    """case.json's fields the driver uses, checked."""
    path = os.path.join(case_dir, "case.json")
    try:
        with open(path) as f:
            case = json.load(f)
    except (OSError, ValueError) as e:
        raise CaseError("cannot read %s: %s" % (path, e))
    if not isinstance(case, dict):
        raise CaseError("%s is not a JSON object" % path)
    out = {}
    ifm = case.get("ifmsize")
    # main.py's --ifmsize takes any number of integers: [1, C, H, W] for a convolution, [1, N]
    # for a network that starts with Gemm or MatMul.
    if not (isinstance(ifm, list) and ifm and all(type(v) is int and v > 0 for v in ifm)):
        raise CaseError("%s: ifmsize must be a list of positive integers ([1, C, H, W]), got %r" % (path, ifm))
    out["ifmsize"] = ifm
    for key in ("input_precision", "weight_precision", "seed"):
        v = case.get(key)
        if type(v) is not int:
            raise CaseError("%s: %s must be an integer, got %r" % (path, key, v))
        out[key] = v
    for name in ("model.onnx", "arch.py"):
        if not os.path.isfile(os.path.join(case_dir, name)):
            raise CaseError("%s has no %s" % (case_dir, name))
    return out


def load_arch(path):
    """The ArchTem dict arch.py defines (run as a module of its own, never cached)."""
    try:
        namespace = runpy.run_path(path, run_name="pimdiff_case_arch")
    except Exception as e:  # noqa: BLE001
        raise CaseError("%s does not run: %s: %s" % (path, type(e).__name__, e))
    arch = namespace.get("ArchTem")
    if not isinstance(arch, dict):
        raise CaseError("%s defines no ArchTem dict (configs/example_config.py's format)" % path)
    return arch


class Console:
    """sys.stdout while main.main runs outside its flow files: kept, and passed to stderr."""

    def __init__(self, sink):
        self.sink = sink
        self.parts = []

    def write(self, text):
        self.parts.append(text)
        self.sink.write(text)
        return len(text)

    def flush(self):
        self.sink.flush()

    def lines(self):
        return "".join(self.parts).splitlines()


class Sites:
    """CIM-MLC source lines, as `file:line (function)` relative to its src/, numbered."""

    def __init__(self, src):
        self.src = src + os.sep
        self.names = []
        self.index = {}

    def caller(self, depth):
        """The innermost frame in CIM-MLC's src/ at or above sys._getframe(depth + 1)."""
        frame = sys._getframe(depth + 1)
        while frame is not None:
            path = os.path.realpath(frame.f_code.co_filename)
            if path.startswith(self.src):
                site = "%s:%d (%s)" % (os.path.relpath(path, self.src), frame.f_lineno,
                                       frame.f_code.co_name)
                if site not in self.index:
                    self.index[site] = len(self.names)
                    self.names.append(site)
                return self.index[site]
            frame = frame.f_back
        return -1


class SiteTemplate(str):
    """One of CIM-MLC's meta-operator templates (codegen/*CodeTem.py, `ConvTmpl = "CIM.read_core-conv
    - {ifmsize} ..."`), whose format() also notes which CIM-MLC line made each line of text. The
    code generators collect formatted instructions and print them all from one loop
    (generate_output_instructions), so the print site says nothing; the format site is the line
    that decided the operands. The text returned is the plain str str.format returns."""

    def format(self, *args, **kwargs):
        text = str.format(str(self), *args, **kwargs)
        made = SiteTemplate.made
        if made is not None:
            site = SiteTemplate.sites.caller(1)
            for line in text.splitlines():
                if line.strip():
                    made[line.strip()] = site
        return text

    made = None
    sites = None


class OriginFile:
    """A flow file main.main opened, as CIM-MLC wrote it, plus where each of its lines came from:
    the CIM-MLC line that formatted its meta-operator (SiteTemplate), else the line whose print()
    began it. Why: a fault or a wrong value is found at a meta-operator of a flow, but the bug is
    in the code generator line that made it; naming that line points a finding into CIM-MLC's
    source, and lets findings of one line merge whatever the network (origins.json, README.md)."""

    def __init__(self, real, sites, made):
        self.real = real
        self.sites = sites
        self.made = made
        self.lines = []      # per completed line: an index into sites.names (-1: unknown)
        self.text = []       # the line being written
        self.printed = None  # the print site of the line being written, once it has begun

    def write(self, text):
        if text:
            for part in text.splitlines(keepends=True):
                if self.printed is None:
                    self.printed = self.sites.caller(1)
                self.text.append(part)
                if part.endswith("\n"):
                    self._end_line()
        return self.real.write(text)

    def _end_line(self):
        line = "".join(self.text).strip()
        self.lines.append(self.made.get(line, self.printed))
        self.text = []
        self.printed = None

    def origins(self):
        if self.text:
            self._end_line()
        return {"sites": self.sites.names, "lines": self.lines}

    def __getattr__(self, name):
        return getattr(self.real, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.real.close()
        return False


class CimMlc:
    """CIM-MLC's main.py, imported once from a tree's src/, run case after case."""

    def __init__(self, tree, manifest):
        self.tree = tree
        self.manifest = manifest
        self.src = os.path.realpath(os.path.join(tree, "src"))
        started = time.perf_counter()
        if self.src not in sys.path:
            sys.path.insert(0, self.src)
        spec = importlib.util.spec_from_file_location("cim_mlc_main", os.path.join(self.src, "main.py"))
        main = importlib.util.module_from_spec(spec)
        sys.modules["cim_mlc_main"] = main
        spec.loader.exec_module(main)
        self.main = main
        self.import_seconds = time.perf_counter() - started
        self.util = sys.modules["utils.util"]

        # main.py reads the global ArchTem (main.py:75, :87) that `from configs import *` bound:
        # configs/example_config.py's dict. Every module that imported it holds that one
        # object, so a case's architecture is installed by changing the dict in place.
        self.arch = sys.modules["configs.example_config"].ArchTem
        self.arch_default = copy.deepcopy(self.arch)
        self.arch_holders = []
        for name, module in sorted(sys.modules.items()):
            path = os.path.realpath(getattr(module, "__file__", None) or "/")
            if not path.startswith(self.src + os.sep):
                continue  # CIM-MLC's modules only (some, like torch.classes, answer any name)
            held = module.__dict__.get("ArchTem")
            if held is None:
                continue
            if held is not self.arch:
                raise RuntimeError("module %s holds an ArchTem other than configs.example_config's" % name)
            self.arch_holders.append(name)

        self.record = {}
        self._install_recorders()
        self.origin_files = {}
        self._install_flow_origins()
        self.pins = self._pin_threads()
        self.requests = 0
        self.last = {}

    # -- observing main.main's objects without changing them --

    def _install_recorders(self):
        main = self.main
        for name in RECORDED:
            setattr(main, name, self._recorder(name, getattr(main, name)))
        real_initialize = main.initialize
        real_get_layer_output = main.get_layer_output

        def initialize(*args, **kwargs):
            result = real_initialize(*args, **kwargs)
            self.record["initialize"] = result
            return result

        def get_layer_output(model, image):
            self.record["image"] = {"shape": list(image.shape), "dtype": str(image.dtype)}
            outs = real_get_layer_output(model, image)
            self.record["ort_outs"] = outs
            return outs

        main.initialize = initialize
        main.get_layer_output = get_layer_output

    def _install_flow_origins(self):
        """Where each flow line comes from (OriginFile, SiteTemplate): main.py opens its flow
        files with the builtin open (main.py:71, :82, :90), so an open of its own in main's
        namespace hands back the real file wrapped (every other file is opened unchanged); and
        each code generator's templates, imported into its module by `from .XCodeTem import *`,
        are rebound there to SiteTemplates. Nothing CIM-MLC computes or writes changes."""
        import cim_layout
        flow_names = {name for _, name in cim_layout.FLOW_FILES}
        self.sites = Sites(self.src)
        self.made = {}
        SiteTemplate.sites = self.sites
        SiteTemplate.made = self.made
        for name in ("codegen.CoreWise", "codegen.CrossbarWise", "codegen.WordlineWise"):
            module = sys.modules.get(name)
            for attr, value in list(vars(module).items() if module else []):
                if attr.endswith("Tmpl") and type(value) is str:
                    setattr(module, attr, SiteTemplate(value))
        real_open = open

        def flow_open(file, mode="r", *args, **kwargs):
            f = real_open(file, mode, *args, **kwargs)
            name = os.path.basename(str(file))
            if name in flow_names and "w" in mode:
                f = OriginFile(f, self.sites, self.made)
                self.origin_files[name] = f
            return f

        self.main.open = flow_open

    def _recorder(self, name, cls):
        """A stand-in for class CLS in main's namespace: makes the object as main.main asks and
        keeps it (the object itself is CIM-MLC's, unchanged)."""

        def construct(*args, **kwargs):
            obj = cls(*args, **kwargs)
            self.record[name] = obj
            if name == "AddrGenerator":
                self._trace_addresses(obj)
            return obj

        construct.__wrapped__ = cls
        construct.__name__ = name
        return construct

    def _trace_addresses(self, gen):
        """Wraps the handle_* methods of one AddrGenerator (instance attributes, the class is
        untouched) to record BufSrc and BufDst around each node (codegen/Addr.py:40-81)."""
        trace = self.record.setdefault("addr_trace", [])
        model = gen.onnx_model
        for attr in dir(gen):
            if not attr.startswith("handle_"):
                continue
            method = getattr(gen, attr)

            def traced(node, *args, _method=method, _name=attr):
                index = next((i for i, n in enumerate(model.graph.node) if n is node), None)
                before = (gen.BufSrc, gen.BufDst)
                result = _method(node, *args)
                trace.append({"node": index, "handler": _name,
                              "BufSrc": [before[0], gen.BufSrc], "BufDst": [before[1], gen.BufDst]})
                return result

            setattr(gen, attr, traced)

    def _pin_threads(self):
        import numpy
        import onnx
        import torch
        pins = {"env": dict(THREAD_ENV)}
        torch.set_num_threads(1)
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:  # only possible before any inter-op work; harmless if already 1
            pass
        pins["torch_num_threads"] = torch.get_num_threads()
        pins["torch_num_interop_threads"] = torch.get_num_interop_threads()
        # utils/util.py:53 opens an onnxruntime session without options; the one it gets here
        # runs on one thread (intra and inter op). Only shapes are read of its results.
        ort = self.util.onnxruntime
        real_session = ort.InferenceSession

        def InferenceSession(model, sess_options=None, *args, **kwargs):
            if sess_options is None:
                sess_options = ort.SessionOptions()
                sess_options.intra_op_num_threads = 1
                sess_options.inter_op_num_threads = 1
            return real_session(model, sess_options, *args, **kwargs)

        proxy = types.ModuleType(ort.__name__)
        proxy.__dict__.update(ort.__dict__)
        proxy.InferenceSession = InferenceSession
        self.util.onnxruntime = proxy
        pins["onnxruntime_intra_op_num_threads"] = 1
        pins["onnxruntime_inter_op_num_threads"] = 1
        self.versions = {"python": "%d.%d.%d" % sys.version_info[:3], "torch": torch.__version__,
                         "onnx": onnx.__version__, "onnxruntime": ort.__version__,
                         "numpy": numpy.__version__}
        return pins

    # -- one case --

    def pinned(self, seed):
        return {
            "seed": seed,
            "seeded": ["random", "numpy.random", "torch"],
            "threads": self.pins,
            "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED"),
            "hash_randomization": sys.flags.hash_randomization,
            "versions": self.versions,
            "torch_cuda": self.manifest.get("python", {}).get("torch_cuda"),
            "tree_key": self.manifest.get("key"),
            "requests_served": self.requests,
        }

    def decline(self, model):
        """Networks CIM-MLC cannot take by design: an unsupported answer with the reason."""
        init = {t.name for t in model.graph.initializer}
        inputs = [v.name for v in model.graph.input if v.name not in init]
        if len(inputs) != 1:
            raise pimdiff_serve.Unsupported(
                "CIM-MLC compiles networks with exactly one input (utils/util.py:57-59 feeds the "
                "one ifmsize image to every input): this one has %d (%s)" % (len(inputs), ", ".join(inputs)))
        for i, node in enumerate(model.graph.node):
            if self.util.GetOPtype(node) is None:
                raise pimdiff_serve.Unsupported(
                    "operator %s (node %d, %r) is not in CIM-MLC's operator table "
                    "(utils/util.py:145-183, GetOPtype); its passes skip such nodes"
                    % (node.op_type, i, node.name))

    def compile(self, case_dir, out_dir):
        import numpy
        import onnx
        import torch
        import cim_layout
        self.requests += 1
        self.last = {}
        case = read_case(case_dir)
        self.last["pinned"] = self.pinned(case["seed"])
        model_path = os.path.join(case_dir, "model.onnx")
        arch = load_arch(os.path.join(case_dir, "arch.py"))
        try:
            original = onnx.load(model_path)
        except Exception as e:  # noqa: BLE001 - a model onnx cannot read is the case's fault
            raise CaseError("%s does not load: %s: %s" % (model_path, type(e).__name__, e))
        self.decline(original)

        random.seed(case["seed"])
        numpy.random.seed(case["seed"])
        torch.manual_seed(case["seed"])
        self.record.clear()
        self.origin_files.clear()
        self.made.clear()
        console = Console(sys.stderr)
        saved = sys.stdout
        self.arch.clear()
        self.arch.update(arch)
        started = time.perf_counter()
        sys.stdout = console
        try:
            # main.py:122, with the arguments its command line gives (main.py:110-120).
            self.main.main(model_path, tuple(case["ifmsize"]), case["input_precision"],
                           case["weight_precision"], self.arch, out_dir)
        finally:
            current = sys.stdout
            if current not in (console, saved, sys.__stdout__) and hasattr(current, "close"):
                current.close()  # a flow file main.main had open when it failed
            sys.stdout = saved
            # main.py leaves its flow files to the garbage collector (main.py:97 rebinds
            # sys.stdout without closing them); the OriginFiles keep them alive, so close them
            # here, where CPython would have.
            for f in self.origin_files.values():
                if not f.real.closed:
                    f.real.close()
            self.arch.clear()
            self.arch.update(copy.deepcopy(self.arch_default))
        compile_seconds = time.perf_counter() - started
        self.last["seconds"] = round(compile_seconds, 4)

        try:
            doc = cim_layout.build(
                self.record, original,
                dict(case, model="model.onnx", arch="arch.py"), out_dir,
                {"util": self.util, "api": arch.get("API"), "arch": arch, "console": console.lines()})
            doc["pinned"] = self.last["pinned"]
            doc["cim_mlc"] = {"tree": self.tree, "src": self.src, "key": self.manifest.get("key"),
                              "snapshot": self.manifest.get("snapshot"),
                              "patches": self.manifest.get("patches"),
                              "arch_holders": self.arch_holders}
            doc["seconds"] = {"compile": round(compile_seconds, 4),
                              "import": round(self.import_seconds, 4)}
            with open(os.path.join(out_dir, "layout.json"), "w") as f:
                json.dump(doc, f, separators=(",", ":"))
                f.write("\n")
            origins = {"format": 1, "flows": {name: f.origins()
                                              for name, f in sorted(self.origin_files.items())}}
            with open(os.path.join(out_dir, "origins.json"), "w") as f:
                json.dump(origins, f, separators=(",", ":"))
                f.write("\n")
        except Exception as e:  # noqa: BLE001
            raise DriverError("layout.json: %s: %s" % (type(e).__name__, e)) from e
        self.last["flows"] = sorted(doc["flows"])
        self.record.clear()

    def annotate(self, reply):
        reply.update(self.last)


def protocol_stdout():
    """A private copy of standard output for the protocol's answers; file descriptor 1 then
    goes to standard error, so that nothing else (CIM-MLC's prints, main.py's restoring
    sys.stdout to sys.__stdout__, C libraries) can write into the protocol."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    sys.stdout.flush()
    os.dup2(2, 1)
    return proto


def main(argv=None):
    parser = argparse.ArgumentParser(description="pimdiff's driver of CIM-MLC")
    parser.add_argument("--tree", help="a tree of scripts/build-cim-mlc.sh (default: $CIM_MLC_DIR, "
                        "else the tree holding this driver)")
    parser.add_argument("--serve", action="store_true", help="serve pimdiff's protocol 1 on stdin/stdout")
    parser.add_argument("--case", help="one case directory (model.onnx, arch.py, case.json)")
    parser.add_argument("--out", help="the directory the flows and layout.json are written to")
    args = parser.parse_args(argv)
    if args.serve == bool(args.case or args.out) or (not args.serve and not (args.case and args.out)):
        parser.error("give --serve, or --case DIR and --out DIR")
    try:
        tree = find_tree(args.tree)
        manifest = read_manifest(tree)
    except TreeError as e:
        print("cim-mlc driver: %s" % e, file=sys.stderr)
        return 2
    proto = protocol_stdout()
    cim = CimMlc(tree, manifest)
    frames_root = cim.src
    if args.serve:
        return pimdiff_serve.serve(cim.compile, stdout=proto, frames_root=frames_root,
                                   annotate=cim.annotate)
    os.makedirs(args.out, exist_ok=True)
    reply = pimdiff_serve.answer(0, cim.compile, os.path.realpath(args.case),
                                 os.path.realpath(args.out), frames_root)
    cim.annotate(reply)
    proto.write(json.dumps(reply, indent=1) + "\n")
    proto.flush()
    return {"compiled": 0, "unsupported": 3}.get(reply["status"], 1)


if __name__ == "__main__":
    sys.exit(main())
