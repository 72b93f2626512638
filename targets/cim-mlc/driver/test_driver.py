#!/usr/bin/env python3
"""Tests of the CIM-MLC driver, run with a tree's interpreter:

    T=$(scripts/build-cim-mlc.sh | tail -1)
    CIM_MLC_DIR=$T $T/python targets/cim-mlc/driver/test_driver.py

Without CIM_MLC_DIR the tests build (or find cached) the tree with scripts/build-cim-mlc.sh.
CIM_MLC_FULL_TREE=TREE (a tree built with CIM_MLC_TORCH=full) adds a check that torch's CUDA
stand-ins change no flow. test_injected_exception builds one more tree (--mutation) with a
raise added to CIM-MLC by a patch made here from the tree's own source.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import onnx
from onnx import helper

HERE = os.path.dirname(os.path.realpath(__file__))
REPO = os.path.realpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, HERE)
import examples  # noqa: E402

FLOWS = ("corewise_codegen_output.txt", "crossbarwise_codegen_output.txt", "rcwise_codegen_output.txt")


def build_tree(*flags):
    done = subprocess.run(["bash", os.path.join(REPO, "scripts", "build-cim-mlc.sh"), *flags],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError("build-cim-mlc.sh %s failed:\n%s" % (" ".join(flags), done.stderr[-3000:]))
    return done.stdout.strip().splitlines()[-1]


TREE = os.environ.get("CIM_MLC_DIR") or build_tree()


def write_case(d, net="conv-relu-pool", arch="example", api="Wordline", seed=1, arch_override=None):
    import numpy as np
    os.makedirs(d, exist_ok=True)
    m, ifm = examples.NETWORKS[net](np.random.default_rng(seed))
    onnx.save(m, os.path.join(d, "model.onnx"))
    a = dict(examples.ARCHS[arch], **(arch_override or {}))
    with open(os.path.join(d, "arch.py"), "w") as f:
        f.write(examples.arch_py(a, api))
    with open(os.path.join(d, "case.json"), "w") as f:
        json.dump({"ifmsize": ifm, "input_precision": 8, "weight_precision": 8, "seed": seed}, f)
    return d


def read(path):
    with open(path, "rb") as f:
        return f.read()


class Server:
    def __init__(self, tree, env=None):
        self.proc = subprocess.Popen([os.path.join(tree, "bin", "cim-mlc-serve")], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=dict(os.environ, **(env or {})))
        self.id = 0

    def ask(self, case, out):
        self.id += 1
        os.makedirs(out, exist_ok=True)
        req = {"protocol": 1, "id": self.id, "case": case, "out": out}
        self.proc.stdin.write((json.dumps(req) + "\n").encode())
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        answer = json.loads(line)  # every line the server writes must be an answer
        assert answer["id"] == self.id, answer
        return answer

    def close(self):
        self.proc.stdin.close()
        rest = self.proc.stdout.read()
        err = self.proc.stderr.read().decode(errors="replace")
        self.proc.stdout.close()
        self.proc.stderr.close()
        code = self.proc.wait()
        return code, rest, err


class DriverTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="cim-mlc-test-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def one_shot(self, case, out, tree=TREE, python=None):
        python = python or os.path.join(tree, "python")
        return subprocess.run([python, os.path.join(HERE, "driver.py"), "--tree", tree,
                               "--case", case, "--out", out], capture_output=True, text=True)

    def test_flows_are_main_py_s_byte_for_byte(self):
        for net, api in (("conv-relu-pool", "Wordline"), ("two-convs", "Crossbar"), ("gemm", "Wordline")):
            with self.subTest(net=net, api=api):
                case = write_case(os.path.join(self.tmp, net, "case"), net=net, api=api)
                out = os.path.join(self.tmp, net, "out")
                done = self.one_shot(case, out)
                self.assertEqual(done.returncode, 0, done.stderr)
                self.assertEqual(json.loads(done.stdout)["status"], "compiled")
                ref = os.path.join(self.tmp, net, "main-py")
                repro = subprocess.run([os.path.join(HERE, "repro-main.sh"), case, ref, TREE],
                                       capture_output=True, text=True)
                self.assertEqual(repro.returncode, 0, repro.stderr)
                levels = {"Core": 1, "Crossbar": 2, "Wordline": 3}[api]
                for name in FLOWS[:levels]:
                    self.assertEqual(read(os.path.join(out, name)), read(os.path.join(ref, name)), name)
                    self.assertGreater(os.path.getsize(os.path.join(out, name)), 0, name)
                for name in FLOWS[levels:]:
                    self.assertFalse(os.path.exists(os.path.join(out, name)), name)
                    self.assertFalse(os.path.exists(os.path.join(ref, name)), name)
                # origins.json: one site per flow line; meta-operators made by a template name
                # the code generator line that formatted them, not the printing loop.
                with open(os.path.join(out, "origins.json")) as f:
                    origins = json.load(f)
                self.assertEqual(origins["format"], 1)
                for name in FLOWS[:levels]:
                    table = origins["flows"][name]
                    text = read(os.path.join(out, name)).decode().splitlines()
                    self.assertEqual(len(table["lines"]), len(text), name)
                    for line, site in zip(text, table["lines"]):
                        if line.strip().startswith(("CIM.read", "Mov", "load")):
                            self.assertGreaterEqual(site, 0, line)
                            self.assertNotIn("generate_output_instructions", table["sites"][site], line)
                            self.assertRegex(table["sites"][site], r"^codegen/\w+\.py:\d+ \(\w+\)$")

    def test_layout_is_read_from_cim_mlc_s_objects(self):
        case = write_case(os.path.join(self.tmp, "case"))
        out = os.path.join(self.tmp, "out")
        done = self.one_shot(case, out)
        self.assertEqual(done.returncode, 0, done.stderr)
        with open(os.path.join(out, "layout.json")) as f:
            doc = json.load(f)
        self.assertEqual((doc["format"], doc["version"]), ("pimdiff-cim-mlc-layout", 1))
        self.assertEqual(doc["api"], "Wordline")
        self.assertEqual(sorted(doc["flows"]), ["corewise", "crossbarwise", "rcwise"])
        conv = doc["nodes"][0]
        self.assertEqual(conv["op_type"], "Conv")
        for name in ("ifmsize", "ofmsize", "xb_num", "core_num", "dup", "corestart", "memoryaddr",
                     "xdup", "weight_reorder", "weight_block", "cycle_record", "rc_cycle_record"):
            self.assertIn(name, conv["attrs"], name)
        origins = {a["name"]: a["origin"] for a in conv["attributes"]}
        self.assertEqual(origins["kernel_shape"], "model")
        self.assertEqual(origins["memoryaddr"], "cim-mlc")
        self.assertEqual(conv["attrs"]["weight_reorder"]["data_type"], "INT64")
        self.assertEqual(len(doc["arch"]["chip"]["cores"]), 16)
        self.assertEqual(len(doc["arch"]["chip"]["cores"][0]["xb"]), 16)
        self.assertEqual(doc["io"]["inputs"][0]["consumers"][0]["memoryaddr"][0], 0)
        self.assertEqual(doc["io"]["outputs"][0]["producer"], 2)
        self.assertEqual(doc["segments"]["FlowSeg"], [[0, 2]])
        self.assertEqual(doc["console"], ["Model loaded successfully"])
        self.assertTrue(doc["crossbarwise"]["categories"]["compute"])
        self.assertTrue(doc["rcwise"]["categories"]["compute"])
        self.assertEqual(len(doc["corewise"]["inst"]), read(os.path.join(out, FLOWS[0])).count(b"\n"))

    def test_serve_answers_and_no_state_between_requests(self):
        a = write_case(os.path.join(self.tmp, "a"), net="conv-relu-pool", arch="example", api="Wordline")
        b = write_case(os.path.join(self.tmp, "b"), net="two-convs", arch="tiny", api="Core", seed=2)
        bad = write_case(os.path.join(self.tmp, "bad"), arch_override={"GBBuf": None})
        server = Server(TREE, {"PIMDIFF_CUDA_STUB_TRACE": "1", "PYTHONHASHSEED": "0"})
        outs = [os.path.join(self.tmp, "o%d" % i) for i in range(5)]
        answers = [server.ask(a, outs[0]), server.ask(b, outs[1]), server.ask(bad, outs[2]),
                   server.ask(a, outs[3])]
        code, rest, err = server.close()
        self.assertEqual(code, 0)
        self.assertEqual(rest, b"", "the server wrote something that is not an answer")
        self.assertEqual([x["status"] for x in answers], ["compiled", "compiled", "error", "compiled"])
        self.assertEqual(answers[1]["flows"], ["corewise"])
        self.assertEqual(answers[0]["pinned"]["seed"], 1)
        self.assertEqual(answers[0]["pinned"]["PYTHONHASHSEED"], "0")
        self.assertEqual(answers[0]["pinned"]["threads"]["torch_num_threads"], 1)
        exc = answers[2]["exception"]
        self.assertEqual(exc["type"], "TypeError")
        self.assertEqual([(f["file"], f["function"]) for f in exc["frames"]],
                         [("main.py", "main"), ("codegen/Addr.py", "__init__")])
        for name in FLOWS:
            self.assertEqual(read(os.path.join(outs[0], name)), read(os.path.join(outs[3], name)), name)
        la, lb = (json.loads(read(os.path.join(o, "layout.json"))) for o in (outs[0], outs[3]))
        for doc in (la, lb):
            doc.pop("pinned")
            doc.pop("seconds")
        self.assertEqual(la, lb, "a request left state behind")
        # The same case in a fresh process gives the same flows as in a server that ran others.
        fresh = os.path.join(self.tmp, "fresh")
        done = self.one_shot(b, fresh)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(read(os.path.join(fresh, FLOWS[0])), read(os.path.join(outs[1], FLOWS[0])))
        self.assertNotIn("pimdiff-cuda-stub: called", err, "CIM-MLC called into CUDA")
        self.assertIn("Model loaded successfully", err)

    def test_injected_exception_has_cim_mlc_frames(self):
        src = os.path.join(TREE, "src", "codegen", "CoreWise.py")
        with open(src) as f:
            lines = f.read().splitlines(keepends=True)
        at = next(i for i, l in enumerate(lines) if l.lstrip().startswith("def process_linear_node_cm"))
        indent = lines[at + 1][:len(lines[at + 1]) - len(lines[at + 1].lstrip())]
        mutated = lines[:at + 1] + [indent + "raise ValueError('pimdiff injected')\n"] + lines[at + 1:]
        a, b = os.path.join(self.tmp, "a", "codegen"), os.path.join(self.tmp, "b", "codegen")
        os.makedirs(a)
        os.makedirs(b)
        shutil.copy(src, os.path.join(a, "CoreWise.py"))
        with open(os.path.join(b, "CoreWise.py"), "w") as f:
            f.writelines(mutated)
        diff = subprocess.run(["diff", "-u", "a/codegen/CoreWise.py", "b/codegen/CoreWise.py"],
                              cwd=self.tmp, capture_output=True, text=True).stdout
        patch = os.path.join(self.tmp, "inject.patch")
        with open(patch, "w") as f:
            f.write(diff)
        mutant = build_tree("--mutation", patch)
        self.assertNotEqual(os.path.realpath(mutant), os.path.realpath(TREE))
        with open(os.path.join(mutant, "manifest.json")) as f:
            self.assertEqual(json.load(f)["mutation"], "inject.patch")
        case = write_case(os.path.join(self.tmp, "case"), net="flatten-gemm", api="Core")
        done = self.one_shot(case, os.path.join(self.tmp, "out"), tree=mutant)
        self.assertEqual(done.returncode, 1, done.stderr)
        answer = json.loads(done.stdout)
        self.assertEqual(answer["status"], "error")
        self.assertEqual(answer["message"], "ValueError: pimdiff injected")
        frames = answer["exception"]["frames"]
        self.assertEqual(frames[0], {"file": "main.py", "line": frames[0]["line"], "function": "main"})
        self.assertEqual(frames[-1], {"file": "codegen/CoreWise.py", "line": at + 2,
                                      "function": "process_linear_node_cm"})
        self.assertEqual([f["file"] for f in frames],
                         ["main.py", "codegen/CoreWise.py", "codegen/CoreWise.py", "codegen/CoreWise.py"])

    def test_unsupported_by_design(self):
        case = write_case(os.path.join(self.tmp, "case"))
        m = onnx.load(os.path.join(case, "model.onnx"))
        m.graph.node.insert(1, helper.make_node("Identity", ["c0"], ["c0i"], name="id0"))
        m.graph.node[2].input[0] = "c0i"
        onnx.save(m, os.path.join(case, "model.onnx"))
        done = self.one_shot(case, os.path.join(self.tmp, "out"))
        self.assertEqual(done.returncode, 3, done.stderr)
        answer = json.loads(done.stdout)
        self.assertEqual(answer["status"], "unsupported")
        self.assertIn("Identity", answer["reason"])

    def test_a_directory_that_is_not_a_tree_is_refused(self):
        case = write_case(os.path.join(self.tmp, "case"))
        done = self.one_shot(case, os.path.join(self.tmp, "out"), tree=self.tmp,
                             python=os.path.join(TREE, "python"))
        self.assertEqual(done.returncode, 2)
        self.assertIn("scripts/build-cim-mlc.sh", done.stderr)

    @unittest.skipUnless(os.environ.get("CIM_MLC_FULL_TREE"), "CIM_MLC_FULL_TREE not set")
    def test_cuda_stand_ins_change_no_flow(self):
        full = os.environ["CIM_MLC_FULL_TREE"]
        with open(os.path.join(full, "manifest.json")) as f:
            self.assertEqual(json.load(f)["python"]["torch_cuda"], "full")
        for net in ("conv-relu-pool", "two-convs", "add-branches", "gemm"):
            case = write_case(os.path.join(self.tmp, net, "case"), net=net)
            outs = []
            for i, tree in enumerate((TREE, full)):
                out = os.path.join(self.tmp, net, "out%d" % i)
                done = self.one_shot(case, out, tree=tree)
                self.assertEqual(done.returncode, 0, done.stderr)
                outs.append(out)
            for name in FLOWS:
                self.assertEqual(read(os.path.join(outs[0], name)), read(os.path.join(outs[1], name)))


if __name__ == "__main__":
    unittest.main(verbosity=2)
