#!/usr/bin/env python3
"""Builds stand-in NVIDIA libraries so that PyPI's torch imports and runs on the CPU without
the ~3 GB of nvidia-* CUDA wheels it depends on.

    python3 scripts/cim-mlc-cuda-stubs.py SITE_PACKAGES

Why: PyPI's only Linux x86_64 torch wheels are CUDA builds. With `pip install --no-deps torch`
the wheel installs, but `import torch` fails: torch/lib/libtorch_cuda.so and its siblings are
linked against libcudart, libcublas, libcudnn, ... (DT_NEEDED), which only the nvidia-* wheels
ship. CIM-MLC uses torch on the CPU only (torch.tensor, Tensor.chunk, F.max_pool2d on cycle
counts), so no CUDA function is ever called; the libraries only have to be loadable.

What: for every CUDA library torch's ELF files need and that neither torch nor the system
provides, this writes `SITE_PACKAGES/nvidia/cu13/lib/<soname>` (a directory on torch's own
RPATH, where nvidia's wheels would put the real ones): a small shared library with that soname,
the symbol versions torch asks of it (e.g. `cublasCreate_v2@libcublas.so.13`), and one function
per symbol torch imports from it. Each function returns 100 (cudaErrorNoDevice), which is what a
CUDA call returns on a machine without a GPU; with PIMDIFF_CUDA_STUB_TRACE set in the
environment each call (but the kernel registrations every load and exit makes) also prints `pimdiff-cuda-stub: called NAME` on standard error (the
driver's tests check that CIM-MLC's passes call none). Unversioned symbols that no library
defines go into the libcudart stand-in (loaded first, RTLD_GLOBAL, by torch/__init__.py).

Nothing of torch is changed. Prints the directory it wrote on the last line of stdout; exits
1 with the reason if a compiler (cc) or binutils (readelf, nm) is missing or a library fails
to build.
"""

import collections
import glob
import os
import re
import shutil
import subprocess
import sys

SYSTEM_LIB_DIRS = ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64",
                   "/lib", "/usr/lib"]


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def elf_files(root):
    out = []
    for path in sorted(glob.glob(os.path.join(root, "**", "*.so*"), recursive=True)):
        if os.path.isfile(path) and not os.path.islink(path):
            with open(path, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    out.append(path)
    return out


def system_lib(name):
    for d in SYSTEM_LIB_DIRS:
        if os.path.exists(os.path.join(d, name)):
            return os.path.join(d, name)
    return None


def defined_symbols(path):
    names = set()
    for line in run("nm", "-D", "--defined-only", path).splitlines():
        parts = line.split()
        if parts:
            names.add(parts[-1].split("@")[0])
    return names


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: cim-mlc-cuda-stubs.py SITE_PACKAGES")
    site = os.path.abspath(sys.argv[1])
    torch_dir = os.path.join(site, "torch")
    for tool in ("cc", "readelf", "nm"):
        if shutil.which(tool) is None:
            sys.exit("cim-mlc-cuda-stubs: %s not found (Debian: apt-get install gcc binutils)" % tool)
    elfs = elf_files(torch_dir)
    if not elfs:
        sys.exit("cim-mlc-cuda-stubs: no shared libraries under %s (is torch installed?)" % torch_dir)
    provided = {os.path.basename(p) for p in elfs}

    needed = set()
    version_file = {}                      # version name -> the library that must define it
    undefined = collections.defaultdict(set)  # version ('' = none) -> symbol names
    defined = set()
    for path in elfs:
        dyn = run("readelf", "-d", path)
        needed |= set(re.findall(r"\(NEEDED\)\s+Shared library: \[(.*)\]", dyn))
        current = None
        for line in run("readelf", "-V", path).splitlines():
            m = re.search(r"File: (\S+)\s+Cnt:", line)
            if m:
                current = m.group(1)
                continue
            m = re.search(r"Name: (\S+)\s+Flags:", line)
            if m and current:
                version_file[m.group(1)] = current
        for line in run("nm", "-D", "--undefined-only", path).splitlines():
            parts = line.split()
            # Weak references (`w`, e.g. __gmon_start__) may stay undefined: defining one would
            # make the code that tests it call it.
            if len(parts) < 2 or parts[-2] != "U":
                continue
            name, _, version = parts[-1].partition("@")
            undefined[version.lstrip("@")].add(name)
        defined |= defined_symbols(path)

    missing = sorted(n for n in needed if n not in provided and system_lib(n) is None)
    if not missing:
        print("cim-mlc-cuda-stubs: torch needs no library that is missing", file=sys.stderr)
    system_defined = set()
    for name in needed:
        path = system_lib(name)
        if path and name not in missing:
            system_defined |= defined_symbols(path)

    out = os.path.join(site, "nvidia", "cu13", "lib")
    os.makedirs(out, exist_ok=True)
    work = os.path.join(out, ".build")
    os.makedirs(work, exist_ok=True)
    loose = sorted(s for s in undefined.get("", ())
                   if s not in defined and s not in system_defined)
    first = next((m for m in missing if m.startswith("libcudart.")), missing[0] if missing else None)
    for soname in missing:
        versions = sorted(v for v, f in version_file.items() if f == soname)
        symbols = {v: sorted(undefined.get(v, ())) for v in versions}
        plain = loose if soname == first else []
        every = sorted({s for v in versions for s in symbols[v]} | set(plain))
        src = os.path.join(work, soname + ".c")
        with open(src, "w") as f:
            f.write("/* Generated by scripts/cim-mlc-cuda-stubs.py: a stand-in for %s, so that\n"
                    "   torch loads on a machine without CUDA. Every function returns 100\n"
                    "   (cudaErrorNoDevice). */\n" % soname)
            f.write("#include <stdio.h>\n#include <stdlib.h>\n"
                    "#include <string.h>\n"
                    "static int pimdiff_cuda_stub(const char *name) {\n"
                    "    /* Every CUDA kernel torch's libraries hold is registered by a static\n"
                    "       constructor at load time and unregistered at exit: not traced. */\n"
                    "    if (getenv(\"PIMDIFF_CUDA_STUB_TRACE\") && strncmp(name, \"__cudaRegister\", 14)\n"
                    "            && strncmp(name, \"__cudaUnregister\", 16))\n"
                    "        fprintf(stderr, \"pimdiff-cuda-stub: called %s\\n\", name);\n"
                    "    return 100;\n}\n")
            for s in every:
                f.write("int %s(void) { return pimdiff_cuda_stub(\"%s\"); }\n" % (s, s))
        script = os.path.join(work, soname + ".map")
        with open(script, "w") as f:
            # An unversioned reference binds to a default-version definition, so the loose
            # symbols join the first version node (ld refuses an anonymous node beside named ones).
            for i, v in enumerate(versions):
                names = "".join(" %s;" % s for s in symbols[v] + (plain if i == 0 else []))
                f.write("%s {%s%s };\n" % (v, " global:" if names else "", names))
            if plain and not versions:
                f.write("{ global:%s };\n" % "".join(" %s;" % s for s in plain))
        args = ["cc", "-shared", "-fPIC", "-O1", "-w", "-o", os.path.join(out, soname), src,
                "-Wl,-soname," + soname]
        if versions or plain:
            args.append("-Wl,--version-script=" + script)
        done = subprocess.run(args, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit("cim-mlc-cuda-stubs: building %s failed:\n%s" % (soname, done.stderr[-4000:]))
        print("cim-mlc-cuda-stubs: %s: %d symbols in %d versions" % (soname, len(every), len(versions)),
              file=sys.stderr)
    shutil.rmtree(work)
    print(out)


if __name__ == "__main__":
    main()
