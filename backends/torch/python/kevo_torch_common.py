"""What kevo's torch tools share (docs/torch.md): the torch section of a task
manifest, the static checks of a candidate, the load_inline calls a
candidate makes (read from its syntax tree, never by running it) and the
keys of their builds.

Trusted code: it runs in the build stage and in the judge, never in a
candidate's process after the candidate's code (the candidate host imports
it before it loads the candidate).
"""
import ast
import hashlib
import importlib
import importlib.util
import json
import os
import re
import string
import sys
import types

# What a candidate may import (top-level module names). Everything else is a
# `forbidden` verdict naming the import: a kernel needs torch (and triton)
# and a few pure modules, never the operating system.
ALLOWED_IMPORTS = frozenset({
    "torch", "triton", "math", "typing", "functools", "itertools", "operator", "numbers", "collections",
    "enum", "__future__",
})
# dataclasses is not among them: its decorator pastes field names into Python
# source that it runs (a class made by type() with an __annotations__ key
# built at run time: dataclass_field_exec.py imported os so).

# The allowed modules that are pure Python of the standard library: the
# static checks import them to see which of their attributes are modules.
PURE_IMPORTS = ALLOWED_IMPORTS - {"torch", "triton", "__future__"}

# Names a candidate may not use at all: they reach the interpreter, files or
# code outside the syntax tree the checks see.
FORBIDDEN_NAMES = frozenset({
    "__import__", "eval", "exec", "compile", "open", "globals", "locals", "vars", "getattr", "setattr",
    "delattr", "breakpoint", "input", "memoryview", "__builtins__", "__loader__", "__spec__", "help",
    "exit", "quit", "attrgetter", "methodcaller",
})

# Modules a candidate may not reach through another module's attributes
# (torch.os, np.sys...): the operating system, the interpreter, time.
FORBIDDEN_MODULE_ATTRS = frozenset({
    "os", "sys", "subprocess", "ctypes", "importlib", "builtins", "gc", "inspect", "threading", "_thread",
    "multiprocessing", "socket", "signal", "io", "pathlib", "shutil", "tempfile", "pickle", "marshal", "time",
    "mmap", "resource", "pty", "fcntl", "posix", "platform", "sysconfig", "site", "runpy", "code", "codeop",
    "traceback", "weakref", "atexit", "faulthandler", "tracemalloc", "warnings", "logging", "glob", "shlex",
    "hashlib", "hmac", "secrets", "hub",
    # Other names under which torch's modules hold them (a red team's
    # reading, 2026-12-07: ForkingPickler.loads ran a pickle; numpy loads
    # pickles): multiprocessing, numpy, types, copyreg, pickling.
    "python_multiprocessing", "reduction", "ForkingPickler", "np", "numpy", "types", "copyreg", "model_zoo",
    "from_file",
    # Code run from source text it makes (dataclass_field_exec.py).
    "dataclasses",
})

# Attributes of frames, code objects, generators, coroutines and
# tracebacks: a generator's gi_frame.f_back is the frame that resumed it, so
# a forward could read the judge's own locals in its host (whether the call
# is recorded) and reach the judge's globals and builtins (a red team's
# finding, 2026-12-07: reads_judge_frame.py).
FORBIDDEN_FRAME_ATTRS = frozenset({
    "gi_frame", "gi_code", "gi_yieldfrom", "gi_running", "gi_suspended", "cr_frame", "cr_code", "cr_await",
    "cr_origin", "cr_running", "cr_suspended", "ag_frame", "ag_code", "ag_await", "ag_running", "f_back",
    "f_locals", "f_globals", "f_builtins", "f_code", "f_lasti", "f_lineno", "f_trace", "f_trace_lines",
    "f_trace_opcodes", "tb_frame", "tb_next", "tb_lasti", "tb_lineno",
})

# Calls that copy attributes named by strings in their `assigned` and
# `updated` arguments: with a wrapper whose __setattr__ keeps what it is
# given, getattr by name (wraps_by_name.py reached the builtins so), and
# with their defaults a wrapped class's __dict__ into the wrapper's (a
# module's globals replaced). wraps is allowed only as a decorator with at
# most this many positional arguments and no `assigned`, `updated` or **
# keywords (the wrapper is then the function it decorates); update_wrapper
# (-1) never.
NAME_COPIERS = {("functools", "update_wrapper"): -1, ("functools", "wraps"): 1}

# Double-underscore attributes a candidate may touch (super().__init__()).
ALLOWED_DUNDER_ATTRS = frozenset({"__init__"})

# Attribute chains that are never a kernel's business: the interpreter and
# torch's internals, its compilers (they JIT at run time), its numerics
# switches (written only by kevo; a candidate that changes them at run time
# is caught by the harness too) and autotuning (kevo's parameter mutation
# does that job and times every configuration itself).
FORBIDDEN_ATTR_PREFIXES = (
    ("torch", "_C"), ("torch", "_dynamo"), ("torch", "_inductor"), ("torch", "compile"), ("torch", "jit"),
    ("torch", "utils", "cpp_extension", "load"), ("torch", "utils", "cpp_extension", "_jit_compile"),
    ("torch", "cuda", "memory"), ("torch", "backends"), ("torch", "set_float32_matmul_precision"),
    ("torch", "set_default_dtype"), ("torch", "set_flush_denormal"), ("torch", "use_deterministic_algorithms"),
    ("torch", "set_num_threads"), ("torch", "cuda", "set_device"), ("torch", "multiprocessing"),
    ("torch", "distributed"), ("torch", "library"), ("torch", "ops"), ("torch", "overrides"),
    ("torch", "utils", "_python_dispatch"), ("torch", "testing"), ("torch", "profiler"), ("torch", "autograd", "profiler"),
    # Python run from strings or files: Timer's stmt and setup are compiled
    # and run (a red team's finding: runs_timer_stmt.py), torch.load and
    # torch.package unpickle.
    ("torch", "utils", "benchmark"), ("torch", "load"), ("torch", "package"), ("torch", "serialization"),
    # String annotations are evaluated by typing.get_type_hints (and by
    # what calls it: singledispatch's register), forward references too:
    # Python the checks never see (evaluates_annotation.py).
    ("typing", "get_type_hints"), ("typing", "ForwardRef"), ("typing", "evaluate_forward_ref"),
    ("functools", "singledispatch"), ("functools", "singledispatchmethod"),
    # Methods and attributes named by strings (an fx graph's call_method
    # nodes reach __getattribute__ and the builtins: fx_string_methods.py),
    # and a library loaded by path (torch.classes.load_library).
    ("torch", "fx"), ("torch", "export"), ("torch", "classes"),
    # Files by path (torch.from_file read /etc/passwd; save writes), and
    # enum.global_enum, which writes an enum's members into the globals of
    # the module its `module` names (torch's own functions replaced).
    ("torch", "from_file"), ("torch", "save"), ("torch", "utils", "model_zoo"), ("enum", "global_enum"),
    # They evaluate the string annotations of the function they wrap
    # (datapipe_argument_validation.py bound os through one).
    ("torch", "utils", "data", "argument_validation"), ("torch", "utils", "data", "runtime_validation"),
    ("triton", "autotune"), ("triton", "testing"), ("triton", "runtime", "autotuner"), ("triton", "Config"),
    ("triton", "compile"), ("triton", "runtime", "cache"), ("triton", "knobs"), ("triton", "backends"),
)

LOAD_INLINE_KEYS = ("name", "cpp_sources", "cuda_sources", "functions", "extra_cflags", "extra_cuda_cflags",
                    "extra_ldflags", "extra_include_paths", "verbose", "with_cuda", "is_python_module",
                    "with_pytorch_error_handling", "keep_intermediates", "build_directory")
LOAD_INLINE_POSITIONAL = ("name", "cpp_sources", "cuda_sources", "functions", "extra_cflags", "extra_cuda_cflags",
                          "extra_ldflags", "extra_include_paths")

DEFAULT_SIGNED = True


class TaskError(Exception):
    """A task that cannot be used: the message names the file and the key."""


class StaticViolation(Exception):
    """A candidate that uses what the task does not allow: `forbidden`."""


# Compiler and linker flags a candidate may pass to load_inline: an
# allow-list, since a flag runs the compiler's own machinery (g++'s
# `-wrapper` and `-fplugin`, `-B`, `-specs`, `@file`, nvcc's `-ccbin`,
# `-Wl,`/`-Xlinker` options) and the red team ran a shell in the build
# stage through `-wrapper` that read kevo's environment. What is allowed
# changes code generation only: optimisation, target ISA, math modes,
# macros, warnings, the language standard.
_GXX_FLAGS = re.compile(
    r"-O[0-3sgz]?|-Ofast|-g[0-3]?|-w|-pthread|-std=(c|gnu)\+\+(11|14|17|20|2a|23|2b)"
    r"|-W(no-)?[a-z][a-z0-9-]*(=[a-z0-9]+)?"
    r"|-march=[A-Za-z0-9_.+-]+|-mtune=[A-Za-z0-9_.+-]+|-m(no-)?[a-z0-9][a-z0-9.-]*(=[a-z0-9_.-]+)?"
    r"|-D[A-Za-z_][A-Za-z0-9_]*(=[^\s]*)?|-U[A-Za-z_][A-Za-z0-9_]*"
    r"|-f(no-)?(fast-math|math-errno|unroll-loops|unroll-all-loops|openmp|openmp-simd|strict-aliasing"
    r"|omit-frame-pointer|tree-vectorize|tree-loop-vectorize|tree-slp-vectorize|trapping-math|signed-zeros"
    r"|finite-math-only|associative-math|reciprocal-math|unsafe-math-optimizations|peel-loops"
    r"|prefetch-loop-arrays|inline-functions|inline|exceptions|rtti|PIC|pic|ipa-pta|gcse|rounding-math"
    r"|vect-cost-model(=[a-z]+)?|simd-cost-model=[a-z]+|fp-contract=[a-z]+|excess-precision=[a-z]+)")
_NVCC_FLAGS = re.compile(
    r"-O[0-3]|--?use_fast_math|-lineinfo|--?expt-relaxed-constexpr|--?expt-extended-lambda|-w|--restrict"
    r"|--?extra-device-vectorization|-std=c\+\+(11|14|17|20)"
    r"|--?(ftz|prec-div|prec-sqrt|fmad)=(true|false)|--?maxrregcount=[0-9]+|-arch=(sm|compute)_[0-9]+a?"
    r"|-gencode=?arch=compute_[0-9]+a?,code=(sm|compute)_[0-9]+a?"
    r"|-D[A-Za-z_][A-Za-z0-9_]*(=[^\s]*)?|-U[A-Za-z_][A-Za-z0-9_]*")
_PTXAS_FLAGS = re.compile(r"-O[0-3]|-v|--verbose|--warn-on-spills|--warn-on-local-memory-usage"
                          r"|--?maxrregcount=[0-9]+|--allow-expensive-optimizations=(true|false)")
_LD_FLAGS = re.compile(r"-l(m|gomp|pthread)|-fopenmp|-pthread")


def _allowed_tool_flags(flags, key, where):
    """The flags of one load_inline list, checked against the allow-list
    of its tool; empty strings (KernelBench's `extra_cflags=[""]`) dropped.
    nvcc's `-Xcompiler X` / `-Xptxas X` (and `--compiler-options=X`,
    `--ptxas-options=X`) pass X, a comma-separated list, to g++ / ptxas:
    each item is checked against that tool's list."""
    out = []
    items = [f for f in flags if f.strip()]
    i = 0
    while i < len(items):
        f = items[i].strip()
        i += 1
        if key == "extra_cuda_cflags":
            m = re.fullmatch(r"(-Xcompiler|--compiler-options|-Xptxas|--ptxas-options)(=(.*))?", f)
            if m:
                arg = m.group(3)
                if arg is None:
                    if i >= len(items):
                        raise BuildError("%s: load_inline's %s ends with %s and nothing after it" % (where, key, f))
                    arg = items[i].strip()
                    i += 1
                tool = _GXX_FLAGS if "compiler" in m.group(1) else _PTXAS_FLAGS
                for a in arg.split(","):
                    if not tool.fullmatch(a.strip()):
                        raise BuildError("%s: load_inline's %s passes %r to %s, which a candidate may not "
                                         "(docs/torch.md#build-stage lists the flags allowed)"
                                         % (where, key, a, "g++" if tool is _GXX_FLAGS else "ptxas"))
                out.append(m.group(1) + "=" + arg)
                continue
        allowed = {"extra_cflags": _GXX_FLAGS, "extra_cuda_cflags": _NVCC_FLAGS, "extra_ldflags": _LD_FLAGS}[key]
        if not allowed.fullmatch(f):
            raise BuildError("%s: load_inline's %s has %r, which a candidate may not pass "
                             "(docs/torch.md#build-stage lists the flags allowed)" % (where, key, f))
        out.append(f)
    return out


class BuildError(Exception):
    """A candidate that cannot be built: `compile_error`."""


def read_json(path):
    with open(path, "r", encoding="utf-8") as f:
        return json.load(f)


def torch_section(task_dir):
    """The manifest's "torch" object, with defaults (validated by kevo's task
    loader; read again here because the judge runs in another process)."""
    manifest = read_json(os.path.join(task_dir, "task.json"))
    t = manifest.get("torch", {})
    inputs = t.get("inputs", {})
    signed = inputs.get("signed", DEFAULT_SIGNED)
    return {
        "manifest": manifest,
        "sizes": list(t.get("sizes", [])),
        "signed": signed,
        "allow": list(t.get("allow", [])),
        "forbid_reference_ops": bool(t.get("forbid_reference_ops", True)),
        "languages": list(t.get("languages", ["cuda", "triton"])),
        "stress": list(t.get("stress", [])),
        "reference": os.path.join(task_dir, manifest["reference"]),
        "seed": os.path.join(task_dir, manifest["seed"]),
    }


def sandbox_binds(paths, scripts_dir):
    """The folders and files to bind into a sandboxed process's private
    root (a candidate's host, the profiler), or to let the build stage's
    compilers read (its Landlock rules): `paths` made real, those that
    exist, none under another. A path that holds the folder this process
    runs in, the user's home, or the tree kevo's scripts are in (their
    folder's parent: the build folder, and its parent, the source tree, with
    the task manifests and their hidden shapes) is left out: a broad
    PYTHONPATH entry (the source tree, a home folder, "/") would otherwise
    bring all of it into the root. Returns (kept, left_out)."""
    guarded = [os.getcwd(), os.path.expanduser("~"), os.path.dirname(scripts_dir),
               os.path.dirname(os.path.dirname(scripts_dir))]
    guarded = [os.path.realpath(g) for g in guarded if g and os.path.isabs(g)]
    real, left_out = set(), []
    for p in paths:
        if not p or not os.path.isabs(p) or not os.path.exists(p):
            continue
        r = os.path.realpath(p)
        if any(g == r or g.startswith(r.rstrip("/") + "/") for g in guarded):
            left_out.append(r)
        else:
            real.add(r)
    kept = []
    for p in sorted(real, key=len):
        if not any(p == k or p.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(p)
    return kept, sorted(set(left_out))


def sha256_text(*parts):
    h = hashlib.sha256()
    for p in parts:
        b = p.encode("utf-8") if isinstance(p, str) else p
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


# ---- static checks ---------------------------------------------------------------

def _attr_chain(node):
    """torch.cuda.synchronize -> ("torch", "cuda", "synchronize"); None when
    the chain does not start at a plain name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return tuple(reversed(parts))
    return None


class _Aliases:
    """Which local names stand for which modules (import torch.nn as nn ->
    nn = torch.nn), so that `from torch import backends` and
    `import torch.backends as b` are caught like `torch.backends`."""

    def __init__(self):
        self.names = {}
        self.imported = set()   # the names an import binds (never rebound)

    def resolve(self, chain):
        if not chain:
            return chain
        head = self.names.get(chain[0])
        return (head + chain[1:]) if head else chain


def _format_fields_problem(base):
    """Why `base.format(...)` is refused, or "" when base is a string literal
    whose replacement fields are plain ("{}", "{0}", "{name}", with any
    conversion and spec): a field named "0.attr" or "0[key]" is an
    attribute or item lookup inside the string (reads_frame_by_format.py
    walked frames so)."""
    if not (isinstance(base, ast.Constant) and isinstance(base.value, str)):
        return "something other than a string literal"
    try:
        fields = list(string.Formatter().parse(base.value))
    except ValueError:
        return "a malformed format string"
    for _, name, spec, _ in fields:
        if name and ("." in name or "[" in name):
            return "a string whose field %r looks something up" % name
        if spec and "{" in spec:
            return "a string with a field nested in a format spec (%r)" % spec
    return ""


_PACKAGE_DIRS = {}


def _package_dir(top):
    """Where an allowed package's modules lie, found without importing it
    (None where the interpreter has no such package)."""
    if top not in _PACKAGE_DIRS:
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            spec = None
        places = list(spec.submodule_search_locations or ()) if spec else []
        _PACKAGE_DIRS[top] = places[0] if places else None
    return _PACKAGE_DIRS[top]


def _is_module_chain(chain):
    """Whether an attribute chain (import aliases resolved) names a module:
    a pure module's attributes are looked up (the standard library's, as in
    check_chain), torch's and triton's submodules found as files or
    folders of their package (nothing of torch imported)."""
    if not chain:
        return False
    if chain[0] in PURE_IMPORTS:
        value = importlib.import_module(chain[0])
        for part in chain[1:]:
            value = getattr(value, part, None)
        return isinstance(value, types.ModuleType)
    if chain[0] in ("torch", "triton"):
        module = chain[0]
        for i, part in enumerate(chain[1:], 1):
            inner = module + "." + part
            if _module_source(inner) is not None and not _rebinds(module, part):
                module = inner
                continue
            # An attribute of the module: a module where its source binds
            # the name by an import (torch.nn.modules.conv.F is
            # torch.nn.functional: alias_module_load.py passed it through a
            # subscript and reached torch.load from there).
            module = _imported_modules(module).get(part)
            if module is None:
                return False
            if module.split(".")[0] not in ("torch", "triton"):
                rest = chain[i + 1:]
                if not rest:
                    return True
                top = module.split(".")[0]
                if top in getattr(sys, "stdlib_module_names", ()):
                    value = importlib.import_module(module)   # the standard library's
                    for name in rest:
                        value = getattr(value, name, None)
                    return isinstance(value, types.ModuleType)
                return True   # another package's: taken for a module
        return True
    return False


def _outside_module(chain):
    """The first module outside the allowed packages that a torch or triton
    chain passes through ("" where none): setuptools under
    torch.utils.cpp_extension, whose pkg_resources resolves "module:attr"
    strings (import_by_entry_point.py)."""
    module = chain[0]
    for part in chain[1:]:
        inner = module + "." + part
        if _module_source(inner) is not None and not _rebinds(module, part):
            module = inner
            continue
        module = _imported_modules(module).get(part)
        if module is None:
            return ""
        if module.split(".")[0] not in ("torch", "triton"):
            return "" if module.split(".")[0] in ALLOWED_IMPORTS else module
    return ""


# What of torch.utils a candidate may use: the rest is tooling that runs
# shells, pickles and Python from strings (a third red team's third
# reading: collect_env.run, the datapipes' decoder, bottleneck's
# run_cprofile).
ALLOWED_TORCH_UTILS = frozenset({"cpp_extension"})

_MODULE_SOURCES = {}
_MODULE_IMPORTS = {}
_MODULE_TREES = {}


def _module_tree(dotted):
    """The parsed source of a module of torch's or triton's package (None
    where there is none)."""
    if dotted not in _MODULE_TREES:
        source = _module_source(dotted)
        try:
            with open(source, encoding="utf-8") as f:
                _MODULE_TREES[dotted] = ast.parse(f.read())
        except (OSError, TypeError, ValueError, SyntaxError):
            _MODULE_TREES[dotted] = None
    return _MODULE_TREES[dotted]


def _rebinds(package, name):
    """Whether a package's own source binds `name` at module level to
    something that is no module (triton's `from .runtime.jit import jit`:
    triton.jit is a function though triton/runtime/jit.py is a file, and a
    package's `from .jit import jit` replaces its submodule jit)."""
    tree = _module_tree(package)
    todo = list(tree.body) if tree is not None else []
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.If, ast.Try, ast.With)):
            todo.extend(getattr(n, "body", []) + getattr(n, "orelse", []) + getattr(n, "finalbody", []) +
                        [x for h in getattr(n, "handlers", []) for x in h.body])
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name:
            return True
        elif isinstance(n, (ast.Assign, ast.AnnAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
        elif isinstance(n, ast.ImportFrom):
            for a in n.names:
                if (a.asname or a.name) == name and _imported_modules(package).get(name) is None:
                    return True
    return False


def _module_source(dotted):
    """The source file of a module of torch's or triton's package, found
    without importing it: "" for a package folder without __init__.py, None
    where there is no such module."""
    if dotted not in _MODULE_SOURCES:
        parts = dotted.split(".")
        base = _package_dir(parts[0])
        found = None
        if base is not None:
            path = os.path.join(base, *parts[1:])
            if os.path.isdir(path):
                init = os.path.join(path, "__init__.py")
                found = init if os.path.isfile(init) else ""
            elif os.path.isfile(path + ".py"):
                found = path + ".py"
        _MODULE_SOURCES[dotted] = found
    return _MODULE_SOURCES[dotted]


def _imported_modules(dotted):
    """{name: module} for the names that the source of torch's (or
    triton's) module `dotted` binds to modules by an import, anywhere in
    it (import a.b as n, from . import functional as F, import os)."""
    if dotted in _MODULE_IMPORTS:
        return _MODULE_IMPORTS[dotted]
    found = {}
    _MODULE_IMPORTS[dotted] = found   # (a package's rebinding asks for its imports while they are read)
    source = _module_source(dotted)
    tree = _module_tree(dotted)
    package = dotted if source and source.endswith("__init__.py") else dotted.rpartition(".")[0]
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Import):
            for a in node.names:
                found[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")
                up = up[:len(up) - (node.level - 1)] if node.level > 1 else up
                base = ".".join(up + ([node.module] if node.module else []))
            for a in node.names:
                full = base + "." + a.name
                top = full.split(".")[0]
                if top in ("torch", "triton"):
                    is_module = _module_source(full) is not None and not (
                        base != dotted and _rebinds(base, a.name))
                elif top in getattr(sys, "stdlib_module_names", ()):
                    try:
                        is_module = importlib.util.find_spec(full) is not None
                    except (ImportError, ValueError):
                        is_module = False
                else:
                    is_module = True   # another package's name: taken for a module
                if is_module:
                    found[a.asname or a.name] = full
    _MODULE_IMPORTS[dotted] = found
    return found


# Attribute names refused whatever their base (a module reached through a
# name no file of its package has, or through a subscript or a call):
# torch's op registry, graph and script compilers (jit but triton.jit),
# exporters and the
# functions that evaluate a function's string annotations (a third red
# team's second reading: torch.ops through conv.ops, get_type_hints run by
# torch.utils.data.argument_validation).
FORBIDDEN_ANY_ATTRS = frozenset({
    "ops", "fx", "jit", "onnx", "library", "package", "serialization", "argument_validation",
    "runtime_validation", "get_type_hints",
})

# Decorators that call the function they wrap with its own arguments: a
# method under them keeps its self.
PASS_THROUGH_DECORATORS = frozenset({("torch", "no_grad"), ("torch", "inference_mode"), ("torch", "enable_grad")})

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)

# Methods that Python calls with a class (their first parameter, or the
# owner of a descriptor): a candidate's class reached through one gave its
# methods as plain functions.
CLASS_RECEIVING_METHODS = frozenset({
    "__new__", "__init_subclass__", "__class_getitem__", "__set_name__", "__get__", "__set__", "__delete__",
    "__torch_function__", "__torch_dispatch__", "__prepare__", "__instancecheck__", "__subclasscheck__",
    "__mro_entries__", "__subclasshook__",
})


def _class_scope_nodes(cls):
    """The nodes evaluated in a class body's own scope: its statements and
    its methods' decorators, defaults and annotations, not their bodies."""
    todo = list(cls.body)
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            todo.extend(n.decorator_list + n.args.defaults + [d for d in n.args.kw_defaults if d is not None])
        elif isinstance(n, ast.ClassDef):
            todo.extend(n.decorator_list + n.bases + [k.value for k in n.keywords])
        elif isinstance(n, ast.Lambda):
            todo.extend(n.args.defaults + [d for d in n.args.kw_defaults if d is not None])
        else:
            todo.extend(ast.iter_child_nodes(n))


def _binds_self(fn):
    """Whether a function binds the name self anywhere but in its first
    parameter (an assignment, a loop, a walrus, with, except, match, import,
    a nested definition), its own scope and its comprehensions."""
    args = fn.args.posonlyargs + fn.args.args
    others = args[1:] + fn.args.kwonlyargs + [a for a in (fn.args.vararg, fn.args.kwarg) if a]
    if any(a.arg == "self" for a in others):
        return True
    todo = list(fn.body)
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Name) and n.id == "self" and isinstance(n.ctx, (ast.Store, ast.Del)):
            return True
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == "self":
            return True
        if isinstance(n, ast.ExceptHandler) and n.name == "self":
            return True
        if isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name == "self":
            return True
        if isinstance(n, ast.MatchMapping) and n.rest == "self":
            return True
        if isinstance(n, ast.alias) and (n.asname or n.name.split(".")[0]) == "self":
            return True
        if isinstance(n, _SCOPES):
            continue   # a scope of its own: its bindings are not the method's
        todo.extend(ast.iter_child_nodes(n))
    return False


def _plain_class_problem(cls, classes, aliases, seen=()):
    """Why a class's methods may not change or read the private parts of
    their self, or "": its bases are nothing, object, torch.nn's classes or
    classes of the candidate's that are plain so. Other libraries' machinery
    calls methods through the class with a self of its choosing (enum calls
    _missing_(value): enum_missing_self.py replaced torch.Tensor.equal so;
    torch.autograd.Function calls forward without ctx)."""
    for b in cls.bases:
        chain = _attr_chain(b)
        if chain == ("object",):
            continue
        if chain and len(chain) == 1 and chain[0] in classes and chain[0] not in seen:
            why = _plain_class_problem(classes[chain[0]], classes, aliases, seen + (cls.name,))
            if why:
                return why
            continue
        if chain and chain[0] in aliases.imported and tuple(aliases.resolve(chain))[:2] == ("torch", "nn"):
            continue
        return "in a class derived from %s (whose machinery may call its methods with a self of its choosing)" % (
            ".".join(chain) if chain else "an expression")
    return ""


def _is_plain_super(call, parents):
    """Whether a call is super() or its spelled-out twin super(C, self) in
    a method of class C whose first parameter is self, never rebound
    (KernelBench's programs write super(Model, self).__init__())."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "super") or \
            call.keywords:
        return False
    if not call.args:
        return True
    if len(call.args) != 2 or not all(isinstance(a, ast.Name) for a in call.args) or call.args[1].id != "self":
        return False
    scope = parents.get(call)
    while scope is not None and not isinstance(scope, _SCOPES):
        scope = parents.get(scope)
    owner = parents.get(scope)
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) or not isinstance(owner, ast.ClassDef):
        return False
    args = scope.args.posonlyargs + scope.args.args
    return owner.name == call.args[0].id and bool(args) and args[0].arg == "self" and not _binds_self(scope)


def _self_store_problem(node, parents, aliases, classes):
    """Why a store to self.* (or a read of its private parts) is refused, or
    "": self must be the first parameter of a method written directly in a
    plain class of the candidate's (_plain_class_problem), undecorated (or
    under a pass-through decorator named through an import), and never
    rebound."""
    scope = parents.get(node)
    while scope is not None and not isinstance(scope, _SCOPES):
        scope = parents.get(scope)
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return "outside a method"
    owner = parents.get(scope)
    if not isinstance(owner, ast.ClassDef):
        return "in %s, a function that is no method of a class" % scope.name
    args = scope.args.posonlyargs + scope.args.args
    if not args or args[0].arg != "self":
        return "in %s, whose first parameter is not self" % scope.name
    for d in scope.decorator_list:
        chain = _attr_chain(d.func if isinstance(d, ast.Call) else d)
        if not chain or chain[0] not in aliases.imported or \
                tuple(aliases.resolve(chain)) not in PASS_THROUGH_DECORATORS:
            return "in %s, a decorated method (its decorator chooses its self)" % scope.name
    if _binds_self(scope):
        return "in %s, which binds self to something else" % scope.name
    why = _plain_class_problem(owner, classes, aliases)
    if why:
        return "in %s, %s" % (scope.name, why)
    return ""


def _mutating_methods(tree):
    """The names of the candidate's methods that store to self.* or read
    its private parts."""
    names = set()
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef):
            continue
        for m in cls.body:
            if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                    isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self" and
                    (isinstance(n.ctx, (ast.Store, ast.Del)) or
                     (n.attr.startswith("_") and n.attr not in ALLOWED_DUNDER_ATTRS)) for n in ast.walk(m)):
                names.add(m.name)
    return names


def _annotations(tree):
    """Every annotation of the tree (arguments, returns, annotated names)."""
    for n in ast.walk(tree):
        if isinstance(n, ast.arg) and n.annotation is not None:
            yield n.annotation
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.returns is not None:
            yield n.returns
        elif isinstance(n, ast.AnnAssign):
            yield n.annotation


def check_source(source, filename="candidate.py", languages=("cuda", "triton")):
    """Parses a candidate and checks it statically. Returns the tree. Raises
    BuildError (not Python, no ModelNew) or StaticViolation."""
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as e:
        raise BuildError("%s:%s:%s: SyntaxError: %s\n%s" % (filename, e.lineno, e.offset, e.msg, (e.text or "").rstrip()))
    except ValueError as e:   # NUL bytes
        raise BuildError("%s: not Python source: %s" % (filename, e))
    aliases = _Aliases()

    def where(node):
        return "%s:%d" % (filename, getattr(node, "lineno", 0))

    def forbid(node, what):
        raise StaticViolation("%s: %s" % (where(node), what))

    def check_import(node, module):
        top = module.split(".")[0]
        # A private module's path (from torch.utils.bottleneck.__main__
        # import run_cprofile: exec_by_bottleneck_main.py).
        if module != "__future__" and any(p.startswith("_") for p in module.split(".")):
            forbid(node, "imports from %s (a library's private parts)" % module)
        if top not in ALLOWED_IMPORTS:
            forbid(node, "imports %s (a candidate may import only %s)" % (module, ", ".join(sorted(ALLOWED_IMPORTS - {"__future__"}))))
        if top == "triton" and "triton" not in languages:
            forbid(node, "imports triton (this task allows %s)" % ", ".join(languages))

    def check_chain(node, chain):
        chain = aliases.resolve(chain)
        if not chain:
            return
        # A pure module's attributes are looked up here: one that is a module
        # outside the allowed ones is the interpreter reached by another
        # name (enum's `bltns` is builtins: `from enum import bltns` then
        # `bltns.exec(...)` ran code no check saw; red team, 2026-12-03).
        if chain[0] in PURE_IMPORTS:
            value = importlib.import_module(chain[0])   # the standard library's: nothing of the candidate runs
            for i, part in enumerate(chain[1:], 1):
                value = getattr(value, part, None)
                if value is None:
                    break
                if isinstance(value, types.ModuleType) and value.__name__.split(".")[0] not in ALLOWED_IMPORTS:
                    forbid(node, "reaches the module %s through %s (a kernel has no use for the operating "
                                 "system or the interpreter)" % (value.__name__, ".".join(chain[:i + 1])))
        for part in (chain[1:] if chain[0] in ALLOWED_IMPORTS else ()):
            if part in FORBIDDEN_MODULE_ATTRS:
                forbid(node, "reaches %s through %s (a kernel has no use for the operating system or the "
                             "interpreter)" % (part, ".".join(chain[:chain.index(part)])))
        # torch and triton reached again through a module's attributes
        # (torch.nn.functional.torch.fx): the prefixes below are matched
        # wherever they start in the chain.
        for i in range(len(chain)):
            for prefix in FORBIDDEN_ATTR_PREFIXES:
                if chain[i:i + len(prefix)] == prefix:
                    forbid(node, "uses %s (%s)" % (".".join(chain[:i + len(prefix)]), _why(prefix)))
        if any(part in ("torch", "triton") for part in chain[1:]):
            forbid(node, "reaches %s through another module's attributes (%s)" % (
                next(p for p in chain[1:] if p in ("torch", "triton")), ".".join(chain)))
        # Last, as the more telling reasons above come first.
        if tuple(chain[:2]) == ("torch", "utils") and len(chain) > 2 and chain[2] not in ALLOWED_TORCH_UTILS:
            forbid(node, "uses %s (of torch.utils a candidate may use only %s)" % (
                ".".join(chain[:3]), ", ".join(sorted(ALLOWED_TORCH_UTILS))))
        if chain[0] in ("torch", "triton"):
            outside = _outside_module(tuple(chain))
            if outside:
                forbid(node, "reaches the module %s through %s (a candidate may use only %s)" % (
                    outside, ".".join(chain), ", ".join(sorted(ALLOWED_IMPORTS - {"__future__"}))))

    has_model_new = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                check_import(node, a.name)
                local = a.asname or a.name.split(".")[0]
                aliases.names[local] = tuple((a.name if a.asname else a.name.split(".")[0]).split("."))
                aliases.imported.add(local)
                check_chain(node, tuple(a.name.split(".")))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                forbid(node, "uses a relative import (a candidate is one file)")
            check_import(node, node.module or "")
            for a in node.names:
                if a.name == "*":
                    forbid(node, "uses 'from %s import *' (name what you use)" % node.module)
                if a.name in FORBIDDEN_NAMES:
                    forbid(node, "imports %s (a kernel has no use for it)" % a.name)
                if a.name.startswith("_"):
                    forbid(node, "imports %s from %s (a library's private parts)" % (a.name, node.module))
                full = tuple((node.module or "").split(".")) + (a.name,)
                check_chain(node, full)
                aliases.names[a.asname or a.name] = full
                aliases.imported.add(a.asname or a.name)
    # A name bound to a chain (T = torch.Tensor, cuda = torch.cuda) stands
    # for that chain in the checks, like an import alias.
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and getattr(node, "value", None) is not None:
            chain = _attr_chain(node.value)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if chain and chain[0] in aliases.names:
                for t in targets:
                    if isinstance(t, ast.Name):
                        aliases.names.setdefault(t.id, aliases.resolve(chain))
                    else:
                        forbid(node, "binds %s to something other than a plain name" % ".".join(aliases.resolve(chain)))
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    classes = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    mutating = _mutating_methods(tree)
    # A class whose methods change their self is a base only of plain
    # classes: enum called a mixin's _missing_ with torch.Tensor as its
    # self (enum_mixin_missing.py: class Patch(Patcher, enum.Enum)).
    changers = {c.name for c in classes.values() if any(
        isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) and b.name in mutating for b in c.body)}
    for c in classes.values():
        why = _plain_class_problem(c, classes, aliases)
        if not why:
            continue
        todo, seen = [c], set()
        while todo:
            k = todo.pop()
            for b in k.bases:
                name = b.id if isinstance(b, ast.Name) else None
                if name in classes and name not in seen:
                    seen.add(name)
                    if name in changers:
                        forbid(c, "derives %s from %s, whose methods change their self, and is no plain class (%s)"
                               % (c.name, name, why[3:] if why.startswith("in ") else why))
                    todo.append(classes[name])
    # A name an import bound is never bound again (torch = Deco() made
    # @torch.no_grad a decorator of the candidate's: fake_torch_no_grad.py).
    for n in ast.walk(tree):
        bound = None
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            bound = n.id
        elif isinstance(n, ast.arg):
            bound = n.arg
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound = n.name
        elif isinstance(n, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
            bound = n.name
        elif isinstance(n, ast.MatchMapping):
            bound = n.rest
        if bound and bound in aliases.imported:
            forbid(n, "binds %s again (a name an import bound stands for that module everywhere)" % bound)
    # String annotations are Python that library code evaluates (typing's
    # get_type_hints, from wherever it is called), out of these checks'
    # sight.
    for a in _annotations(tree):
        for n in ast.walk(a):
            if isinstance(n, ast.Constant) and isinstance(n.value, str):
                forbid(n, "uses a string in an annotation (Python that library code evaluates)")
    method_names = {b.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef) for b in n.body
                    if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Name, ast.Attribute)) and not isinstance(parents.get(node), ast.Attribute):
            resolved = aliases.resolve(_attr_chain(node) or ())
            if tuple(resolved) in NAME_COPIERS:
                call = parents.get(node)
                decorates = isinstance(call, ast.Call) and any(
                    call is d for d in getattr(parents.get(call), "decorator_list", ()))
                if not (decorates and call.func is node and len(call.args) <= NAME_COPIERS[tuple(resolved)] and
                        all(k.arg not in (None, "assigned", "updated") for k in call.keywords)):
                    forbid(node, "uses %s other than as a decorator with its default attributes (it copies "
                                 "attributes named by strings)" % ".".join(resolved))
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = node.id if isinstance(node, ast.Name) else node.attr
            if name.endswith("Meta") or name == "EnumType":
                forbid(node, "uses %s (a metaclass: classes whose methods' self is a class)" % name)
        if isinstance(node, ast.Name):
            if node.id in FORBIDDEN_NAMES:
                forbid(node, "uses %s (a kernel has no use for it)" % node.id)
            if node.id == "__name__" and not isinstance(node.ctx, ast.Load):
                forbid(node, "binds __name__ (the module every class of the candidate's names)")
            call = parents.get(node)
            called = isinstance(call, ast.Call) and call.func is node
            # type() only to compare a type (type(x) is torch.Tensor): with
            # three arguments, or as a base, it makes classes whose
            # attributes are strings built at run time, and metaclasses.
            if node.id == "type" and not (called and len(call.args) == 1 and not call.keywords and
                                          isinstance(parents.get(call), ast.Compare)):
                forbid(node, "uses type other than to compare an object's type (type(x) is T)")
            if node.id == "classmethod":
                forbid(node, "uses classmethod (a method that receives a class: one of its methods read through "
                             "it is a plain function)")
            if node.id == "super" and not (called and _is_plain_super(call, parents)):
                forbid(node, "uses super other than as super() or super(ThisClass, self) in a method (its self is "
                             "the method's)")
            if node.id.startswith("__") and node.id.endswith("__") and node.id not in ("__name__",):
                forbid(node, "uses %s" % node.id)
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("__") and node.attr not in ALLOWED_DUNDER_ATTRS:
                forbid(node, "uses the attribute %s (the interpreter's internals)" % node.attr)
            chain = _attr_chain(node)
            if chain:
                check_chain(node, chain)
                resolved = aliases.resolve(chain)
                if chain[0] in aliases.names and any(p.startswith("_") for p in resolved[1:]):
                    forbid(node, "uses %s (a library's private parts)" % ".".join(resolved))
            if node.attr in ("format", "format_map"):
                why = _format_fields_problem(node.value)
                if why:
                    forbid(node, "uses %s on %s (a format string's fields look attributes and items up "
                                 "where these checks cannot see)" % (node.attr, why))
            if node.attr in FORBIDDEN_FRAME_ATTRS or node.attr.startswith("co_"):
                forbid(node, "uses the attribute %s (the interpreter's internals: frames and code)" % node.attr)
            if node.attr in ("attrgetter", "methodcaller", "getattr", "setattr", "delattr"):
                forbid(node, "uses %s (attributes named by strings escape these checks)" % node.attr)
            # exec, eval, open... are as forbidden as attributes of anything
            # (builtins reached under another name) as they are as names.
            if node.attr in FORBIDDEN_NAMES:
                forbid(node, "uses the attribute %s (a kernel has no use for it)" % node.attr)
            # Whatever the base (an alias, a subscript, a call's result), the
            # operating system and the interpreter are never a kernel's.
            # A method's own self's attributes are the candidate's own
            # (self.reduction, a layer of KernelBench's SwinMLP): only a
            # module could carry the system there, and no module is a value.
            base = node.value
            own = isinstance(base, ast.Name) and base.id == "self" and \
                not _self_store_problem(node, parents, aliases, classes)
            if (node.attr in FORBIDDEN_MODULE_ATTRS and not own) or node.attr == "_C":
                forbid(node, "reaches %s (a kernel has no use for the operating system or the interpreter)"
                       % node.attr)
            # A private attribute of anything but the candidate's own
            # objects: enum's _convert_ (any loaded module's globals by name)
            # and typing's ForwardRef._evaluate were reached from a class or
            # a subscript, which the alias rule above does not follow.
            base = node.value
            if node.attr.startswith("_") and node.attr not in ALLOWED_DUNDER_ATTRS:
                if not (isinstance(base, ast.Name) and base.id == "self"):
                    forbid(node, "uses the attribute %s of something other than self (private parts)" % node.attr)
                # And self must be a method's own instance (a function's
                # parameter named self, given enum.Enum, ran its _convert_:
                # self_param_private_convert.py).
                why = _self_store_problem(node, parents, aliases, classes)
                if why:
                    forbid(node, "uses the attribute self.%s %s (private parts: only of a method's own instance)"
                           % (node.attr, why))
            if node.attr in FORBIDDEN_ANY_ATTRS and not own and not (
                    node.attr == "jit" and chain and tuple(aliases.resolve(chain)) == ("triton", "jit")):
                forbid(node, "uses the attribute %s (not a kernel's business, whatever its base)" % node.attr)
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                # Only the candidate's own module's attributes: a store on
                # anything else (a library, a class, the judge's code
                # reached through one) changes code the judge runs.
                if not chain or chain[0] != "self":
                    what = ".".join(aliases.resolve(chain)) if chain else "an attribute of an expression"
                    forbid(node, "assigns to %s (a candidate may change only its own module's attributes, "
                                 "self.*)" % what)
                # And `self` must be a method's own instance: a function's
                # parameter named self, called with torch.Tensor, replaced
                # its allclose and equal (self_named_param.py).
                why = _self_store_problem(node, parents, aliases, classes)
                if why:
                    forbid(node, "assigns to %s %s (a candidate may change only its own objects' attributes, "
                                 "self.* in a method of its class)" % (".".join(chain), why))
            # A method read through its class (or cls, or type(x), or a
            # super() with arguments) is a plain function whose self the
            # caller chooses: H.put(torch.Tensor, v).
            if isinstance(node.ctx, ast.Load) and node.attr in method_names and (
                    (isinstance(base, ast.Name) and (base.id in classes or base.id == "cls")) or
                    (isinstance(base, ast.Call) and isinstance(base.func, ast.Name) and
                     base.func.id in ("type", "super") and (base.args or base.keywords) and
                     not _is_plain_super(base, parents))):
                forbid(node, "reads the method %s through a class (its self would be whatever the caller passes)"
                       % node.attr)
            # A method that changes its self (or reads its private parts) is
            # read only as self.m of a method's own self, super().m, or a
            # library's class's: a class laundered through a library
            # (type_before_parametrizations returns type(module)) gave it as
            # a plain function (class_by_type_before_param.py).
            if isinstance(node.ctx, ast.Load) and node.attr in mutating and not (
                    (isinstance(base, ast.Name) and base.id == "self" and
                     not _self_store_problem(node, parents, aliases, classes)) or
                    _is_plain_super(base, parents) or
                    (chain and chain[0] in aliases.imported)):
                forbid(node, "reads the method %s, which changes its self, other than as self.%s (its self would be "
                             "whatever the caller passes)" % (node.attr, node.attr))
            # torch and triton as an attribute of anything (a module passed
            # through a subscript or a call: [F][0].torch) give every
            # forbidden prefix back.
            if node.attr in ("torch", "triton"):
                forbid(node, "reaches %s through another object's attributes" % node.attr)

        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                re.fullmatch(r"__\w+__", node.value) and node.value != "__main__":
            # A dunder's name as a string: what names attributes by strings
            # (a class's __match_args__, a dict made into a class, a copier)
            # reaches the interpreter's internals with it.
            forbid(node, "uses the string %r (a name of the interpreter's internals)" % node.value)
        elif isinstance(node, ast.MatchClass):
            # `case object(__globals__=g)` looks an attribute up by a name
            # that is no Attribute node (match_class_attrs.py reached the
            # builtins so), and a positional pattern by its class's
            # __match_args__ strings (a red team's second reading): class
            # patterns are refused.
            forbid(node, "uses a class pattern (attributes looked up by names these checks do not see)")
        elif isinstance(node, ast.ClassDef):
            if node.name == "ModelNew" and node in tree.body:
                has_model_new = True
            # No way to hold one of its classes as a value (a class decorator
            # receives it; these methods receive it as their first or an
            # owner parameter): through one, a method is a plain function
            # whose self the caller chooses.
            if node.decorator_list:
                forbid(node, "decorates the class %s (its decorator receives the class itself)" % node.name)
            for b in node.body:
                if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) and b.name in CLASS_RECEIVING_METHODS:
                    forbid(b, "defines %s (a method that receives a class: one of its methods read through it is "
                              "a plain function)" % b.name)
            for k in node.keywords:
                if k.arg in (None, "metaclass"):
                    forbid(node, "gives the class %s a metaclass (classes whose methods' self is a class)" % node.name)
            for b in node.bases:
                if not _attr_chain(b.value if isinstance(b, ast.Subscript) else b):
                    forbid(node, "derives the class %s from something other than a named class" % node.name)
            # In the class body a method is a plain function: put(torch.Tensor, v)
            # there, or a list of it read later, chooses its self.
            own = {b.name for b in node.body if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef))}
            for n in _class_scope_nodes(node):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in own:
                    forbid(n, "uses the method %s in its class's body (a plain function there: its self would "
                              "be whatever the caller passes)" % n.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            forbid(node, "uses %s (state kept across calls)" % ("global" if isinstance(node, ast.Global) else "nonlocal"))
        elif isinstance(node, ast.Call):
            fn = _attr_chain(node.func)
            if fn and aliases.resolve(fn)[-1:] == ("autotune",):
                forbid(node, "autotunes (kevo's parameter mutation tunes; a candidate may not time itself)")
    # A module imported by `import` is used only as the base of an attribute
    # chain: as a value (m = torch, (torch,)[0], f(torch)) it would carry
    # the library past the chain checks below.
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(a.asname or a.name.split(".")[0] for a in node.names)
    # Nor is a module reached otherwise: a name from `from torch.nn import
    # functional`, a chain (torch.nn), an alias bound to one (c =
    # torch.cuda). Passed through a call it came back as a value whose
    # attributes no chain check saw (submodule_as_value.py reached
    # torch.load so). Bound to a plain name (an alias, checked as one) or
    # called, it is not a value.
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.Name, ast.Attribute)) or not isinstance(child.ctx, ast.Load) or \
                    (isinstance(node, ast.Attribute) and node.value is child):
                continue
            if isinstance(child, ast.Name) and child.id in modules:
                forbid(child, "uses the module %s as a value (only its attributes: %s.name)" % (child.id, child.id))
            chain = _attr_chain(child)
            if not chain or chain[0] not in aliases.names or \
                    (isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is child) or \
                    (isinstance(node, ast.Call) and node.func is child):
                continue
            resolved = aliases.resolve(chain)
            if _is_module_chain(resolved):
                forbid(child, "uses the module %s as a value (only its attributes: %s.name)" % (
                    ".".join(resolved), ".".join(chain)))
    if not has_model_new:
        raise BuildError("%s: defines no class ModelNew at module level (the candidate's form: "
                         "class ModelNew(nn.Module) with Model's interface)" % filename)
    return tree


def _why(prefix):
    p = ".".join(prefix)
    if p.startswith("triton.autotune") or p.startswith("triton.Config") or "autotuner" in p:
        return "kevo's parameter mutation tunes; a candidate may not autotune itself"
    if p in ("torch.compile", "torch.jit", "torch._dynamo", "torch._inductor", "triton.compile"):
        return "a compiler that runs at judge time; write the kernel"
    if p == "torch.utils.cpp_extension.load":
        return "build with load_inline and constant sources"
    if p.startswith("torch.backends") or p in ("torch.set_float32_matmul_precision", "torch.set_default_dtype",
                                                "torch.set_flush_denormal", "torch.use_deterministic_algorithms"):
        return "numerics settings are the judge's"
    return "not a kernel's business"


# ---- load_inline, read from the tree ------------------------------------------------

class _Consts:
    """Module-level names bound once to constant expressions, folded."""

    def __init__(self, tree, filename):
        self.values = {}
        self.filename = filename
        counts = {}
        for node in tree.body:
            targets = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets = [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    counts[t.id] = counts.get(t.id, 0) + 1
        for node in tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name) and counts.get(t.id) == 1:
                        try:
                            self.values[t.id] = self.fold(node.value)
                        except BuildError:
                            pass

    def fold(self, node):
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bool, int, float, type(None))):
            return node.value
        if isinstance(node, ast.JoinedStr):
            out = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    out.append(str(v.value))
                elif isinstance(v, ast.FormattedValue) and v.format_spec is None and v.conversion == -1:
                    out.append(str(self.fold(v.value)))
                else:
                    raise self.dynamic(node)
            return "".join(out)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            a, b = self.fold(node.left), self.fold(node.right)
            if type(a) is not type(b) and not (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple))):
                raise self.dynamic(node)
            return a + b
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.fold(e) for e in node.elts]
        if isinstance(node, ast.Dict):
            return {self.fold(k): self.fold(v) for k, v in zip(node.keys, node.values)}
        if isinstance(node, ast.Name) and node.id in self.values:
            return self.values[node.id]
        if isinstance(node, ast.Call) and _attr_chain(node.func) == ("textwrap", "dedent"):
            raise self.dynamic(node)
        raise self.dynamic(node)

    def dynamic(self, node):
        return BuildError("%s:%d: load_inline arguments must be constants (string literals, concatenations of "
                          "them, or module-level names bound once to such values); this one is computed at run time"
                          % (self.filename, getattr(node, "lineno", 0)))


def _is_load_inline(func, aliases):
    chain = _attr_chain(func)
    if not chain:
        return False
    chain = aliases.resolve(chain)
    return chain[-1] == "load_inline" and (len(chain) == 1 or chain[:3] == ("torch", "utils", "cpp_extension")
                                          or chain[-2:] == ("cpp_extension", "load_inline"))


def load_inline_calls(tree, filename="candidate.py"):
    """Every load_inline call of the candidate, its arguments folded to
    constants: [{"name", "cpp_sources", "cuda_sources", "functions",
    "extra_cflags", "extra_cuda_cflags", "extra_ldflags", "extra_include_paths",
    "with_pytorch_error_handling"}]. Raises BuildError for dynamic ones."""
    aliases = _Aliases()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                aliases.names[a.asname or a.name.split(".")[0]] = tuple(
                    (a.name if a.asname else a.name.split(".")[0]).split("."))
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                aliases.names[a.asname or a.name] = tuple(node.module.split(".")) + (a.name,)
    consts = _Consts(tree, filename)
    calls = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _is_load_inline(node.func, aliases)):
            continue
        args = {}
        if len(node.args) > len(LOAD_INLINE_POSITIONAL):
            raise BuildError("%s:%d: load_inline takes at most %d positional arguments"
                             % (filename, node.lineno, len(LOAD_INLINE_POSITIONAL)))
        for k, a in zip(LOAD_INLINE_POSITIONAL, node.args):
            args[k] = consts.fold(a)
        for kw in node.keywords:
            if kw.arg is None:
                raise BuildError("%s:%d: load_inline(**kwargs): arguments must be constants" % (filename, node.lineno))
            if kw.arg not in LOAD_INLINE_KEYS:
                raise BuildError("%s:%d: load_inline has no argument %r" % (filename, node.lineno, kw.arg))
            if kw.arg == "build_directory":
                continue   # kevo decides where builds live
            args[kw.arg] = consts.fold(kw.value)
        calls.append(normalise_load_inline(args, "%s:%d" % (filename, node.lineno)))
    return calls


def normalise_load_inline(args, where="load_inline"):
    """The arguments of one load_inline call in one spelling (the build stage
    reads them from the tree, the candidate's host from the real call: both
    must give the same key)."""
    def str_list(v, key):
        if v is None:
            return []
        if isinstance(v, str):
            return [v]
        if isinstance(v, (list, tuple)) and all(isinstance(s, str) for s in v):
            return list(v)
        raise BuildError("%s: load_inline's %s must be a string or a list of strings" % (where, key))

    name = args.get("name")
    if not isinstance(name, str) or not name.isidentifier():
        raise BuildError("%s: load_inline needs name= a Python identifier, got %r" % (where, name))
    functions = args.get("functions")
    if functions is None:
        fn = []
    elif isinstance(functions, str):
        fn = [[functions, functions]]
    elif isinstance(functions, (list, tuple)) and all(isinstance(f, str) for f in functions):
        fn = [[f, f] for f in functions]
    elif isinstance(functions, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in functions.items()):
        fn = [[k, v] for k, v in functions.items()]
    else:
        raise BuildError("%s: load_inline's functions must be a string, a list of strings or a dict" % where)
    for f, _ in fn:
        if not f.isidentifier():
            raise BuildError("%s: load_inline function name %r is not an identifier" % (where, f))
    return {
        "name": name,
        "cpp_sources": str_list(args.get("cpp_sources"), "cpp_sources"),
        "cuda_sources": str_list(args.get("cuda_sources"), "cuda_sources"),
        "functions": fn,
        "extra_cflags": _allowed_tool_flags(str_list(args.get("extra_cflags"), "extra_cflags"), "extra_cflags", where),
        "extra_cuda_cflags": _allowed_tool_flags(str_list(args.get("extra_cuda_cflags"), "extra_cuda_cflags"),
                                                 "extra_cuda_cflags", where),
        "extra_ldflags": _allowed_tool_flags(str_list(args.get("extra_ldflags"), "extra_ldflags"), "extra_ldflags",
                                             where),
        "extra_include_paths": str_list(args.get("extra_include_paths"), "extra_include_paths"),
        "with_pytorch_error_handling": bool(args.get("with_pytorch_error_handling", True)),
    }


def load_inline_key(call):
    """The build key of one normalised load_inline call (the toolchain's
    identity is added by the build stage's cache, not here: the candidate's
    host only matches calls to what the build made)."""
    return sha256_text(json.dumps(call, sort_keys=True))
