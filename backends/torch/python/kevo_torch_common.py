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
import types

# What a candidate may import (top-level module names). Everything else is a
# `forbidden` verdict naming the import: a kernel needs torch (and triton)
# and a few pure modules, never the operating system.
ALLOWED_IMPORTS = frozenset({
    "torch", "triton", "math", "typing", "functools", "itertools", "operator", "numbers", "collections",
    "dataclasses", "enum", "__future__",
})

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
        base = _package_dir(chain[0])
        if len(chain) == 1:
            return True
        if base is None:
            return False
        path = os.path.join(base, *chain[1:])
        return os.path.isfile(path + ".py") or os.path.isdir(path)
    return False


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

    has_model_new = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                check_import(node, a.name)
                local = a.asname or a.name.split(".")[0]
                aliases.names[local] = tuple((a.name if a.asname else a.name.split(".")[0]).split("."))
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
        if isinstance(node, ast.Name):
            if node.id in FORBIDDEN_NAMES:
                forbid(node, "uses %s (a kernel has no use for it)" % node.id)
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
            if node.attr in FORBIDDEN_MODULE_ATTRS or node.attr == "_C":
                forbid(node, "reaches %s (a kernel has no use for the operating system or the interpreter)"
                       % node.attr)
            # A private attribute of anything but the candidate's own
            # objects: enum's _convert_ (any loaded module's globals by name)
            # and typing's ForwardRef._evaluate were reached from a class or
            # a subscript, which the alias rule above does not follow.
            base = node.value
            if node.attr.startswith("_") and node.attr not in ALLOWED_DUNDER_ATTRS and \
                    not (isinstance(base, ast.Name) and base.id in ("self", "cls")):
                forbid(node, "uses the attribute %s of something other than self (private parts)" % node.attr)
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                # Only the candidate's own module's attributes: a store on
                # anything else (a library, a class, the judge's code
                # reached through one) changes code the judge runs.
                if not chain or chain[0] != "self":
                    what = ".".join(aliases.resolve(chain)) if chain else "an attribute of an expression"
                    forbid(node, "assigns to %s (a candidate may change only its own module's attributes, "
                                 "self.*)" % what)

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
        elif isinstance(node, ast.ClassDef) and node.name == "ModelNew" and node in tree.body:
            has_model_new = True
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
