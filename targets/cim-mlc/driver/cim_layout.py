"""layout.json: what CIM-MLC holds in memory after a run of its main.py, as JSON.

Nothing here computes what CIM-MLC computes: every value is read from the objects main.main
made (the ONNX model whose nodes CIM-MLC annotated, the CIM architecture object, the pass and
code generator objects), converted to JSON. LAYOUT.md beside this file documents every field
with the line of CIM-MLC that sets it.
"""

import hashlib
import math
import os

import numpy as np
import onnx
from onnx import helper, numpy_helper

FORMAT = "pimdiff-cim-mlc-layout"
VERSION = 1

# CrossbarWiseCodegen and RCWiseCodegen keep one dict per kind of instruction, named
# `<category>_cycle`: {cycle: {node index: [instruction, ...]}} (codegen/CrossbarWise.py:101-115,
# codegen/WordlineWise.py:85-99). generate_output_instructions prints only the cycles that are
# keys of the first six (CrossbarWise.py:789-797, WordlineWise.py:842-850).
CATEGORIES = ("compute", "pooling", "alu", "activ", "mov", "softmax",
              "elementwise_op", "indexing", "reduction", "transform", "where")
KEYED_CATEGORIES = CATEGORIES[:6]

FLOW_FILES = (("corewise", "corewise_codegen_output.txt"),
              ("crossbarwise", "crossbarwise_codegen_output.txt"),
              ("rcwise", "rcwise_codegen_output.txt"))


def jsonable(x):
    """X as JSON values: numpy and torch scalars and arrays as numbers and (nested) lists,
    tuples as lists, bytes as text (UTF-8) or {"hex": ...}, non-finite floats as the strings
    "nan", "inf", "-inf", tensors as {"dims", "data_type", "values"}."""
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else repr(x)
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return jsonable(x.tolist())
    if isinstance(x, np.generic):
        return jsonable(x.item())
    if isinstance(x, np.dtype):
        return str(x)
    if isinstance(x, type) and issubclass(x, np.generic):
        return np.dtype(x).name
    if isinstance(x, bytes):
        try:
            return x.decode("utf-8")
        except UnicodeDecodeError:
            return {"hex": x.hex()}
    if isinstance(x, onnx.TensorProto):
        return tensor_json(x)
    if hasattr(x, "detach") and hasattr(x, "numpy"):  # a torch tensor
        return jsonable(x.detach().cpu().numpy())
    return repr(x)


def tensor_json(t):
    return {
        "name": t.name,
        "dims": list(t.dims),
        "data_type": onnx.TensorProto.DataType.Name(t.data_type),
        "values": jsonable(numpy_helper.to_array(t)),
    }


def attribute_json(attr, origin):
    # helper.get_attribute_value is what CIM-MLC's get_attribute returns (utils/util.py:12-16).
    return {
        "name": attr.name,
        "type": onnx.AttributeProto.AttributeType.Name(attr.type),
        "value": jsonable(helper.get_attribute_value(attr)),
        "origin": origin,
    }


def node_attributes(node, original):
    """The node's attributes in CIM-MLC's order, each marked `model` when it is one of the
    original node's attributes (same name and value) and `cim-mlc` when a pass added it."""
    unused = [a.SerializeToString() for a in (original.attribute if original is not None else ())]
    out = []
    for attr in node.attribute:
        blob = attr.SerializeToString()
        if blob in unused:
            unused.remove(blob)
            out.append(attribute_json(attr, "model"))
        else:
            out.append(attribute_json(attr, "cim-mlc"))
    return out


class NodeIndex:
    """Node objects to their index in the graph (by identity; by equality when the protobuf
    implementation hands out new wrappers)."""

    def __init__(self, model):
        self.nodes = list(model.graph.node)
        self.by_id = {id(n): i for i, n in enumerate(self.nodes)}

    def __call__(self, node):
        i = self.by_id.get(id(node))
        if i is not None:
            return i
        for j, n in enumerate(self.nodes):
            if n == node:
                return j
        return None


def value_info_json(v):
    dims = []
    t = v.type.tensor_type
    for d in t.shape.dim:
        dims.append(d.dim_value if d.HasField("dim_value") else (d.dim_param or None))
    return {"name": v.name, "elem_type": onnx.TensorProto.DataType.Name(t.elem_type) if t.elem_type else None,
            "shape": dims if t.HasField("shape") else None}


def chip_json(cim):
    """The ChipLevel object CreateCIM built (configs/architecture.py:56-75), every attribute."""
    chip = {k: jsonable(v) for k, v in vars(cim).items() if k != "core"}
    cores = []
    for core in cim.core:
        c = {k: jsonable(v) for k, v in vars(core).items() if k != "xb"}
        c["xb"] = []
        for xb in core.xb:
            x = {k: jsonable(v) for k, v in vars(xb).items() if k != "device"}
            x["device"] = {k: jsonable(v) for k, v in vars(xb.device).items()}
            c["xb"].append(x)
        cores.append(c)
    chip["cores"] = cores
    return chip


def first_attrs(attributes):
    """name -> value of the first attribute of that name: what get_attribute reads."""
    out = {}
    for a in attributes:
        out.setdefault(a["name"], a["value"])
    return out


def schedule_json(gen, index):
    out = {
        "xbdst": jsonable(gen.xbdst),
        "categories": {},
        "keyed_categories": list(KEYED_CATEGORIES),
        "xb_occupation": [{"xb": jsonable(k), "cycles": jsonable(v)} for k, v in gen.xb_cycle.items()],
    }
    for name in CATEGORIES:
        table = getattr(gen, name + "_cycle", None)
        if table is None:
            continue
        entries = []
        for cycle, per_node in table.items():
            for node_id, insts in per_node.items():
                entries.append({"cycle": jsonable(cycle), "node": jsonable(node_id),
                                "insts": [jsonable(i) for i in insts]})
        out["categories"][name] = entries
    for extra in ("test_number", "xbsize"):
        if hasattr(gen, extra):
            out[extra] = jsonable(getattr(gen, extra))
    return out


def flows_json(out_dir):
    flows = {}
    for level, name in FLOW_FILES:
        path = os.path.join(out_dir, name)
        if os.path.isfile(path):
            with open(path, "rb") as f:
                data = f.read()
            flows[level] = {"file": name, "bytes": len(data), "lines": data.count(b"\n"),
                            "sha256": hashlib.sha256(data).hexdigest()}
    return flows


def build(record, original_model, case, out_dir, extra):
    """The layout.json document of one run. RECORD: what the driver's recorders kept of
    main.main's objects (keys: initialize, ort_outs, image, and the pass class names);
    ORIGINAL_MODEL: model.onnx as loaded before CIM-MLC changed it; CASE: case.json's fields."""
    cim, model, initializer, const_node_output = record["initialize"]
    index = NodeIndex(model)
    util = extra["util"]  # CIM-MLC's utils.util module: GetOPtype and GetInputOP are its own

    nodes = []
    for i, node in enumerate(model.graph.node):
        original = original_model.graph.node[i] if i < len(original_model.graph.node) else None
        attributes = node_attributes(node, original)
        nodes.append({
            "index": i,
            "name": node.name,
            "op_type": node.op_type,
            "domain": node.domain,
            "inputs": list(node.input),
            "outputs": list(node.output),
            "op_class": util.GetOPtype(node),
            "op_src": jsonable(util.GetInputOP(model, i)),
            "attributes": attributes,
            "attrs": first_attrs(attributes),
        })

    initializer_names = {t.name for t in model.graph.initializer}
    graph_inputs = [v for v in model.graph.input if v.name not in initializer_names]

    ort_outs = record.get("ort_outs") or {}
    tensors = {name: {"shape": list(value.shape), "dtype": str(value.dtype)}
               for name, value in ort_outs.items()}

    inits = []
    for name, entry in initializer.items():
        inits.append({
            "name": name,
            "shape": jsonable(entry["shape"]),
            "data_type": jsonable(entry["data_type"]),
            "addr": jsonable(entry.get("addr")),
        })
    consts = []
    for node_id, entry in const_node_output.items():
        consts.append({
            "node": jsonable(node_id),
            "name": entry["name"],
            "shape": jsonable(entry["shape"]),
            "data_type": jsonable(entry["data_type"]),
            "addr": jsonable(entry.get("addr")),
            "value": jsonable(entry["value"]),
        })

    io_inputs = []
    for v in graph_inputs:
        consumers = []
        for n in nodes:
            if v.name in n["inputs"]:
                consumers.append({"node": n["index"], "op_src": n["op_src"],
                                  "memoryaddr": n["attrs"].get("memoryaddr"),
                                  "ifmsize": n["attrs"].get("ifmsize")})
        io_inputs.append({"name": v.name, "value_info": value_info_json(v), "consumers": consumers})
    io_outputs = []
    for v in model.graph.output:
        producers = [n for n in nodes if v.name in n["outputs"]]
        entry = {"name": v.name, "value_info": value_info_json(v), "producer": None}
        if producers:
            p = producers[0]
            entry.update({"producer": p["index"], "memoryaddr": p["attrs"].get("memoryaddr"),
                          "ofmsize": p["attrs"].get("ofmsize"), "op_type": p["op_type"]})
        io_outputs.append(entry)

    doc = {
        "format": FORMAT,
        "version": VERSION,
        "case": case,
        "api": extra["api"],
        "flows": flows_json(out_dir),
        "arch": {"ArchTem": jsonable(extra["arch"]), "chip": chip_json(cim)},
        "graph": {
            "inputs": [value_info_json(v) for v in graph_inputs],
            "outputs": [value_info_json(v) for v in model.graph.output],
            "initializers": inits,
            "constants": consts,
            "tensors": tensors,
            "image": jsonable(record.get("image")),
        },
        "nodes": nodes,
        "io": {"layout": "HWC", "inputs": io_inputs, "outputs": io_outputs},
        "console": extra["console"],
    }

    mapping = record.get("CoreVirtualMapping")
    if mapping is not None:
        doc["core_mapping"] = {k: jsonable(v) for k, v in vars(mapping).items()}
    dup = record.get("CoreWiseDuper")
    if dup is not None:
        doc["segments"] = {
            "TotalCore": jsonable(dup.TotalCore),
            "NeededCore": jsonable(dup.NeededCore),
            "FlowSeg": [[index(n) for n in seg] for seg in dup.FlowSeg],
            "DupSeg": [[index(n) for n in seg] for seg in dup.DupSeg],
        }
    addr = record.get("AddrGenerator")
    if addr is not None:
        doc["addresses"] = {
            "GBSize": jsonable(addr.GBSize),
            "OpwithWeight": jsonable(addr.OpwithWeight),
            "BufSrc": jsonable(addr.BufSrc),
            "BufDst": jsonable(addr.BufDst),
            "trace": record.get("addr_trace", []),
        }
    coregen = record.get("CoreWiseCodegen")
    if coregen is not None:
        doc["corewise"] = {"read_size": jsonable(coregen.read_size),
                           "inst": [jsonable(i) for i in coregen.inst]}
    xgen = record.get("CrossbarWiseCodegen")
    if xgen is not None:
        doc["crossbarwise"] = schedule_json(xgen, index)
    row = record.get("RowWisePipeline")
    if row is not None:
        doc["row_remap"] = {"xbsize": jsonable(row.xbsize)}
    rgen = record.get("RCWiseCodegen")
    if rgen is not None:
        doc["rcwise"] = schedule_json(rgen, index)
    doc["passes_run"] = [name for name in (
        "CoreVirtualMapping", "CoreWiseDuper", "CoreWisePipeline", "AddrGenerator",
        "CoreWiseCodegen", "CrossbarWiseDup", "CrossbarWiseCodegen", "RowWisePipeline",
        "RCWiseCodegen") if name in record]
    return doc
