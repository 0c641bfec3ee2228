#!/usr/bin/env python3
"""The torch build stage's static side (backends/torch/python/kevo_torch_common.py):
the checks of a candidate's source and the load_inline calls read from its
syntax tree, constants folded, dynamic ones refused. No compiler runs here.

  static_checks_test.py SOURCE_DIR
"""
import os
import sys
import unittest

SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, os.path.join(SRC, "backends", "torch", "python"))
sys.dont_write_bytecode = True
import kevo_torch_common as kc  # noqa: E402

HEAD = "import torch\nimport torch.nn as nn\n"
TAIL = "\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n"


def check(body, languages=("cuda", "triton")):
    return kc.check_source(HEAD + body + TAIL, "candidate.py", languages)


class StaticChecks(unittest.TestCase):
    def forbidden(self, body, text):
        with self.assertRaises(kc.StaticViolation) as e:
            check(body)
        self.assertIn(text, str(e.exception))

    def test_a_plain_candidate_passes(self):
        check("import math\nimport triton\nimport triton.language as tl\nfrom torch.utils.cpp_extension import load_inline\n")

    def test_imports_outside_the_allow_list(self):
        for mod in ("os", "sys", "subprocess", "ctypes", "importlib", "time", "threading", "socket", "pickle"):
            self.forbidden("import %s\n" % mod, "imports %s" % mod)
        self.forbidden("from os import path\n", "imports os")
        self.forbidden("import os.path as p\n", "imports os.path")

    def test_triton_when_the_task_allows_cuda_only(self):
        with self.assertRaises(kc.StaticViolation):
            check("import triton\n", languages=("cuda",))

    def test_the_interpreter_is_out_of_reach(self):
        self.forbidden("x = eval('1')\n", "uses eval")
        self.forbidden("x = getattr(torch, 'ones')\n", "uses getattr")
        self.forbidden("x = open('/etc/passwd')\n", "uses open")
        self.forbidden("x = ().__class__\n", "__class__")
        self.forbidden("x = torch.__dict__\n", "__dict__")
        self.forbidden("x = __builtins__\n", "__builtins__")
        self.forbidden("x = torch.os.environ\n", "reaches os")
        self.forbidden("import torch.utils.cpp_extension as ce\nx = ce.os\n", "reaches os")

    def test_frames_format_lookups_and_string_runners(self):
        # A red team's reading, 2026-12-07 (attacks in tests/torch/adversarial).
        self.forbidden("def g():\n    yield 1\nf = g().gi_frame\n", "gi_frame")
        self.forbidden("x = f.f_back\n", "f_back")
        self.forbidden("x = tb.tb_frame\n", "tb_frame")
        self.forbidden("x = len.co_code\n", "co_code")
        self.forbidden("s = '{0.real}'.format(1)\n", "looks something up")
        self.forbidden("s = '{0[k]}'.format({})\n", "looks something up")
        self.forbidden("s = '{:{w}}'.format(1, w=3)\n", "nested in a format spec")
        self.forbidden("f = '{}'\ns = f.format(1)\n", "something other than a string literal")
        self.forbidden("s = str.format('{0.real}', 1)\n", "something other than a string literal")
        check("s = '{} {name!r:>8} {{literal}}'.format(1, name=2)\nt = f'{s}'\n")
        self.forbidden("import typing\nh = typing.get_type_hints(int)\n", "typing.get_type_hints")
        self.forbidden("from typing import ForwardRef\n", "typing.ForwardRef")
        self.forbidden("import functools\nd = functools.singledispatch(len)\n", "functools.singledispatch")
        for mod in ("torch.fx", "torch.export", "torch.utils.benchmark", "torch.package", "torch.serialization"):
            self.forbidden("import %s\n" % mod, mod)
        self.forbidden("x = torch.load('a')\n", "torch.load")
        self.forbidden("torch.classes.load_library('a.so')\n", "torch.classes")
        # Class patterns look attributes up by names (keywords, or the
        # class's __match_args__); other patterns stay.
        self.forbidden("match x:\n    case object(shape=g):\n        pass\n", "class pattern")
        self.forbidden("match x:\n    case C(g):\n        pass\n", "class pattern")
        check("match x:\n    case (1, y):\n        pass\n    case {'k': v}:\n        pass\n    case 3:\n        pass\n")
        # A second red team the same day: dunders named by strings, private
        # attributes of anything but self, torch reached again through a
        # module's attributes, pickles and files by path, enum.global_enum.
        self.forbidden("d = {'__match_args__': ('x',)}\n", "'__match_args__'")
        check("if __name__ == '__main__':\n    pass\n")
        self.forbidden("import enum\nclass E(enum.Enum):\n    pass\nf = E._convert_\n", "_convert_")
        self.forbidden("import typing\nr = typing.get_args(typing.List['x'])[0]._evaluate\n", "_evaluate")
        check("class K:\n    def __init__(self):\n        self._n = 1\n    def n(self):\n        return self._n\n")
        self.forbidden("import torch.nn.functional as F\nf = F.torch.fx\n", "torch.fx")
        self.forbidden("import torch.nn.functional as F\nf = F.torch.ones\n", "reaches torch through")
        self.forbidden("p = torch.utils.data.dataloader.python_multiprocessing\n", "python_multiprocessing")
        self.forbidden("n = torch.storage.np\n", "reaches np")
        self.forbidden("t = torch.from_file('/etc/passwd', size=4)\n", "from_file")
        self.forbidden("torch.save(1, 'a')\n", "torch.save")
        self.forbidden("import enum\nenum.global_enum(E)\n", "enum.global_enum")
        # functools' attribute copiers only with their default attributes.
        check("import functools\ndef deco(f):\n    @functools.wraps(f)\n    def g(*a):\n        return f(*a)\n"
              "    return g\n")
        self.forbidden("import functools\nfunctools.update_wrapper(a, b)\n", "functools.update_wrapper")
        self.forbidden("import functools\nw = functools.wraps(f)(g)\n", "functools.wraps")
        self.forbidden("from functools import wraps\nw = wraps(f, ('x',))\n", "functools.wraps")
        self.forbidden("import functools\nu = functools.update_wrapper\n", "functools.update_wrapper")
        self.forbidden("import functools\nk = {}\nfunctools.wraps(f, **k)\n", "functools.wraps")

    def test_torch_internals_compilers_and_numerics(self):
        self.forbidden("torch.backends.cuda.matmul.allow_tf32 = True\n", "torch.backends")
        self.forbidden("from torch import backends\n", "torch.backends")
        self.forbidden("import torch.backends.cudnn as c\n", "torch.backends")
        self.forbidden("torch.set_float32_matmul_precision('medium')\n", "torch.set_float32_matmul_precision")
        self.forbidden("f = torch.compile(lambda x: x)\n", "torch.compile")
        self.forbidden("x = torch._C\n", "torch._C")
        self.forbidden("x = torch.ops.aten.mm\n", "torch.ops")
        self.forbidden("from torch.utils.cpp_extension import load\n", "torch.utils.cpp_extension.load")

    def test_autotune_and_state(self):
        self.forbidden("import triton\n@triton.autotune(configs=[], key=[])\ndef k():\n    pass\n", "autotune")
        self.forbidden("def f():\n    global CACHE\n", "global")
        self.forbidden("torch.relu = lambda x: x\n", "assigns to torch.relu")

    def test_no_way_around_the_chains(self):
        # The red team's escapes (tests/torch/adversarial: forge_store,
        # null_inflate, load_hook, seed_predict): a module as a value, a
        # store outside self, a name bound to a chain, attribute names as
        # strings, private parts, the OS reached from any base.
        self.forbidden("t = torch\n", "uses the module torch as a value")
        self.forbidden("x = (torch,)[0]._C\n", "reaches _C")
        self.forbidden("x = (torch,)[0].nn\n", "uses the module torch as a value")
        self.forbidden("def f(m=torch):\n    return m\n", "uses the module torch as a value")
        self.forbidden("T = torch.Tensor\nT.to = lambda *a: a\n", "assigns to torch.Tensor.to")
        self.forbidden("import operator\nx = operator.attrgetter('sys')\n", "attrgetter")
        self.forbidden("from operator import methodcaller\n", "")
        self.forbidden("c = torch.cuda\nx = c.memory\n", "torch.cuda.memory")
        self.forbidden("x = torch.hub.hashlib\n", "reaches hub")
        self.forbidden("x = [0][0].hashlib\n", "reaches hashlib")
        self.forbidden("x = torch._tensor\n", "private parts")
        self.forbidden("x = [1][0].sys\n", "reaches sys")
        self.forbidden("class A:\n    pass\nA.f = 1\n", "assigns to A.f")
        # The second red team (2026-12-03): builtins under another name
        # (enum's bltns), a private name imported from a pure module, exec
        # as an attribute of anything.
        self.forbidden("from enum import bltns\n", "reaches the module builtins through enum.bltns")
        self.forbidden("import enum\nx = enum.bltns\n", "reaches the module builtins")
        self.forbidden("from collections import _sys\n", "private parts")
        self.forbidden("x = [0][0].exec('1')\n", "uses the attribute exec")
        self.forbidden("x = [0][0].vars(1)\n", "uses the attribute vars")
        # What honest candidates write still passes.
        check("dt = torch.float32\nrelu = torch.relu\n"
              "class K(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
              "        self.w = nn.Parameter(torch.ones(3))\n        self._cache = None\n        self.w.requires_grad = False\n")
        check("from collections import OrderedDict\nfrom functools import partial\nimport enum\n"
              "import collections.abc\nx = collections.abc.Sequence\nE = enum.Enum\n")

    def test_a_module_reached_otherwise_is_no_value(self):
        # submodule_as_value.py: a module from `from torch.nn import
        # functional` passed through a call came back with attributes no
        # chain check saw (torch.load); so did chains and aliases that are
        # modules.
        same = "def same(m):\n    return m\n"
        self.forbidden("from torch.nn import functional\n" + same + "x = same(functional).relu\n",
                       "uses the module torch.nn.functional as a value")
        self.forbidden(same + "x = same(torch.nn).functional\n", "uses the module torch.nn as a value")
        self.forbidden("c = torch.cuda\n" + same + "x = same(c).graphs\n", "uses the module torch.cuda as a value")
        self.forbidden("from torch import cuda\nx = [cuda][0]\n", "uses the module torch.cuda as a value")
        self.forbidden("from collections import abc\nx = (abc,)\n", "uses the module collections.abc as a value")
        self.forbidden("x = (lambda: torch.nn.functional)()\n", "uses the module torch.nn.functional as a value")
        # Aliases, calls, classes, functions and dtypes are no modules.
        check("from torch.nn import functional as F\nG = torch.nn.functional\ny = G.relu\n"
              "x = isinstance(1, torch.Tensor)\nz = torch.zeros(1, dtype=torch.float32)\nw = [F.relu, torch.exp]\n"
              "import triton.language as tl\nk = tl.constexpr\nfrom collections import abc\ns = abc.Sequence\n")

    def test_a_third_red_team(self):
        # alias_module_load.py: torch.nn.modules.conv.F is torch.nn.functional
        # under a name no file of torch has; [F][0].torch gave torch back.
        self.forbidden("x = [nn.modules.conv.F][0].relu\n", "uses the module torch.nn.modules.conv.F as a value")
        self.forbidden("x = [nn.functional.relu][0].torch\n", "reaches torch through another object's attributes")
        check("x = [nn.modules.conv.Conv2d][0]\ny = nn.modules.conv.F.relu\n")
        # dataclass_field_exec.py: dataclasses runs source made of field names.
        self.forbidden("import dataclasses\n", "imports dataclasses")
        self.forbidden("x = [0][0].dataclasses\n", "reaches dataclasses")
        # self_named_param.py: a function's parameter named self, called
        # with torch.Tensor; a method called through its class; self rebound.
        tensor_put = "\nput(torch.Tensor, 1)\n"
        self.forbidden("def put(self, v):\n    self.allclose = v\n" + tensor_put, "a function that is no method")
        cls = "class H:\n    def put(self, v):\n        self.allclose = v\n"
        self.forbidden(cls + "H.put(torch.Tensor, 1)\n", "reads the method put through a class")
        self.forbidden(cls + "x = H()\ntype(x).put(torch.Tensor, 1)\n", "reads the method put through a class")
        self.forbidden(cls + "class G(H):\n    def go(self):\n        return super(G, G)\n",
                       "uses super other than")
        self.forbidden(cls + "class G(H):\n    def go(self):\n        return super(H, self)\n", "uses super other than")
        self.forbidden(cls + "def go(self):\n    return super(H, self)\n", "uses super other than")
        check(cls + "class G(H):\n    def __init__(self):\n        super(G, self).__init__()\n"
                    "        super(G, self).put(1)\n")
        self.forbidden(cls + "    bad = [put]\n", "uses the method put in its class's body")
        self.forbidden("class H:\n    def put(self, v):\n        for self in [torch.Tensor]:\n"
                       "            self.allclose = v\n", "binds self to something else")
        self.forbidden("class H:\n    def put(self, v):\n        [(self := torch.Tensor) for _ in [0]]\n"
                       "        self.allclose = v\n", "binds self to something else")
        self.forbidden("class H:\n    @staticmethod\n    def put(self, v):\n        self.allclose = v\n",
                       "a decorated method")
        self.forbidden("class H:\n    def put(self, v):\n        def inner(self):\n            self.allclose = v\n",
                       "a function that is no method")
        # A class held as a value gives no method that changes its self
        # (ResNet's _make_layer(Bottleneck, ...) passes its block's class).
        self.forbidden(cls + "x = [H][0].put\n", "reads the method put, which changes its self")
        self.forbidden(cls + "def f(c=H):\n    return c.put\n", "reads the method put, which changes its self")
        self.forbidden("def deco(c):\n    return c\n@deco\nclass H:\n    pass\n", "decorates the class H")
        self.forbidden("class H:\n    def __set_name__(self, owner, name):\n        pass\n", "defines __set_name__")
        self.forbidden("class H:\n    def __init_subclass__(c):\n        pass\n", "defines __init_subclass__")
        self.forbidden("class H:\n    @classmethod\n    def m(c):\n        return c\n", "uses classmethod")
        check(cls + "h = H()\nok = isinstance(h, H) or isinstance(h, (H, int))\nclass G(H):\n    pass\n"
                    "class R(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                    "        self.reduction = self._make(G, 2)\n    def _make(self, block, n):\n"
                    "        return [block() for _ in range(n)]\n")
        # No metaclasses, no classes made by type().
        self.forbidden("H = type('H', (), {})\n", "uses type other than to compare")
        self.forbidden("class M(type):\n    pass\n", "uses type other than to compare")
        self.forbidden("import enum\nclass M(enum.EnumMeta):\n    pass\n", "a metaclass")
        self.forbidden("class H(metaclass=nn.Module):\n    pass\n", "gives the class H a metaclass")
        self.forbidden("def f():\n    return nn.Module\nclass H(f()):\n    pass\n", "other than a named class")
        # What honest candidates write still passes.
        check("class K(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.n = 0\n"
              "    @torch.no_grad()\n    def forward(self, x):\n        self.n += 1\n"
              "        if type(x) is not torch.Tensor:\n            return x\n        return x\n"
              "    @staticmethod\n    def grid(n):\n        return (n,)\n"
              "    def go(self):\n        return self.grid(3)\n")

    def test_a_third_red_teams_second_reading(self):
        # Private parts only of a method's own self (self_param_*.py).
        self.forbidden("import enum\ndef reach(self):\n    return self._convert_('X', 'os', None)\n",
                       "uses the attribute self._convert_ in reach")
        self.forbidden("class H:\n    def m(self):\n        return cls._x\n", "of something other than self")
        # self.* changed only in plain classes (enum_missing_self.py).
        self.forbidden("import enum\nclass P(enum.Enum):\n    A = 1\n    def _missing_(self):\n        self.x = 1\n",
                       "in a class derived from enum.Enum")
        self.forbidden("class F(torch.autograd.Function):\n    def forward(self, x):\n        self.y = x\n",
                       "in a class derived from torch.autograd.Function")
        check("class A:\n    def __init__(self):\n        self.a = 1\n        self._b = 2\n"
              "class B(A, object):\n    def m(self):\n        self.c = self._b\n"
              "class C(nn.Linear):\n    def m(self):\n        self.d = 1\n"
              "class D(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.put(1)\n"
              "    def put(self, v):\n        self.v = v\n"
              "class E(D):\n    def put(self, v):\n        super().put(v)\n")
        # A method that changes its self read only as self.m, super().m or a
        # library class's (class_by_type_before_param.py).
        self.forbidden("class H:\n    def put(self, v):\n        self.v = v\n"
                       "def f(k):\n    k.put(torch.Tensor, 1)\n", "reads the method put, which changes its self")
        self.forbidden("class H:\n    def put(self, v):\n        self.v = v\n"
                       "def f(self):\n    self.put(torch.Tensor, 1)\n", "reads the method put, which changes its self")
        check("class H:\n    def get(self):\n        return 1\ndef f(k):\n    return k.get()\n")
        # Names an import bound are never bound again (fake_torch_no_grad*.py).
        self.forbidden("torch = 1\n", "binds torch again")
        self.forbidden("def f(nn):\n    return nn\n", "binds nn again")
        self.forbidden("class H:\n    torch = 1\n", "binds torch again")
        self.forbidden("for torch in [1]:\n    pass\n", "binds torch again")
        # No string in an annotation (datapipe_argument_validation.py).
        self.forbidden("def f(x: 'int'):\n    return x\n", "a string in an annotation")
        self.forbidden("import typing\ndef f(x: typing.Optional['int']) -> int:\n    return x\n",
                       "a string in an annotation")
        self.forbidden("y: 'int' = 1\n", "a string in an annotation")
        self.forbidden("x = torch.utils.data.argument_validation\n", "argument_validation")
        # Attribute names refused whatever their base (ops_by_star_import.py).
        self.forbidden("x = [0][0].ops\n", "uses the attribute ops")
        self.forbidden("x = [0][0].fx\n", "uses the attribute fx")
        self.forbidden("x = [0][0].jit\n", "uses the attribute jit")
        check("import triton\nimport triton.language as tl\n@triton.jit\ndef k(x, B: tl.constexpr):\n    pass\n")

    def test_a_third_red_teams_third_reading(self):
        # A class whose methods change their self is a base only of plain
        # classes (enum_mixin_missing.py).
        self.forbidden("import enum\nclass P:\n    def _missing_(self):\n        self.x = 1\n"
                       "class E(P, enum.Enum):\n    A = 1\n", "derives E from P, whose methods change their self")
        check("class P:\n    def get(self):\n        return 1\nimport enum\nclass E(P, enum.Enum):\n    A = 1\n")
        # No import from a private module's path (exec_by_bottleneck_main.py).
        self.forbidden("from torch.utils.bottleneck.__main__ import run_cprofile\n", "a library's private parts")
        self.forbidden("import torch._utils\n", "a library's private parts")
        # Of torch.utils only cpp_extension (collect_env.run, the datapipes'
        # decoder).
        self.forbidden("from torch.utils.collect_env import run\n", "uses torch.utils.collect_env")
        self.forbidden("from torch import utils\nx = utils.data\n", "uses torch.utils.data")
        check("from torch.utils.cpp_extension import load_inline\nimport torch.utils.cpp_extension\n")
        # No module outside the allowed packages through a torch chain
        # (import_by_entry_point.py: setuptools under cpp_extension).
        self.forbidden("from torch.utils.cpp_extension import setuptools\n", "reaches the module setuptools")
        # __name__ is read, never bound.
        self.forbidden("__name__ = 'torch'\n", "binds __name__")

    def test_a_module_is_what_its_package_leaves_bound(self):
        # triton's own `from .runtime.jit import jit`: triton.jit is a
        # function though triton/runtime/jit.py is a file (a package that
        # rebinds a submodule's name). A made-up triton package stands in
        # for the real one, which this machine may not have.
        import tempfile
        files = {"__init__.py": "from .runtime.jit import jit\nfrom . import language\nfrom .runtime import jit as j2\n",
                 "runtime/__init__.py": "from .jit import jit\n", "runtime/jit.py": "def jit(f):\n    return f\n",
                 "language/__init__.py": "from . import core\n", "language/core.py": "x = 1\n"}
        saved = {k: dict(v) for k, v in (("dirs", kc._PACKAGE_DIRS), ("src", kc._MODULE_SOURCES),
                                          ("imp", kc._MODULE_IMPORTS), ("tree", kc._MODULE_TREES))}
        with tempfile.TemporaryDirectory() as tmp:
            for name, text in files.items():
                os.makedirs(os.path.dirname(os.path.join(tmp, "triton", name)), exist_ok=True)
                with open(os.path.join(tmp, "triton", name), "w") as f:
                    f.write(text)
            try:
                for cache in (kc._MODULE_SOURCES, kc._MODULE_IMPORTS, kc._MODULE_TREES):
                    for k in [k for k in cache if k.split(".")[0] == "triton"]:
                        del cache[k]
                kc._PACKAGE_DIRS["triton"] = os.path.join(tmp, "triton")
                self.assertTrue(kc._is_module_chain(("triton", "language")))
                self.assertTrue(kc._is_module_chain(("triton", "language", "core")))
                self.assertFalse(kc._is_module_chain(("triton", "jit")))
                self.assertFalse(kc._is_module_chain(("triton", "runtime", "jit")))
                self.assertFalse(kc._is_module_chain(("triton", "j2")))
                check("import triton\n@triton.jit\ndef k(x):\n    return x\n")
                self.forbidden("import triton\nx = [triton.language][0]\n", "uses the module triton.language as a value")
            finally:
                for cache, key in ((kc._PACKAGE_DIRS, "dirs"), (kc._MODULE_SOURCES, "src"),
                                   (kc._MODULE_IMPORTS, "imp"), (kc._MODULE_TREES, "tree")):
                    cache.clear()
                    cache.update(saved[key])

    def test_a_candidate_without_model_new_or_not_python(self):
        with self.assertRaises(kc.BuildError) as e:
            kc.check_source(HEAD + "class Model(nn.Module):\n    pass\n")
        self.assertIn("no class ModelNew", str(e.exception))
        with self.assertRaises(kc.BuildError) as e:
            kc.check_source("def broken(:\n    pass\n")
        self.assertIn("SyntaxError", str(e.exception))


class LoadInline(unittest.TestCase):
    def calls(self, body):
        return kc.load_inline_calls(kc.check_source(HEAD + body + TAIL))

    def test_constants_are_folded(self):
        body = ('from torch.utils.cpp_extension import load_inline\n'
                'CUDA = """__global__ void k() {}\\n""" + "void launch();"\n'
                'CPP = "torch::Tensor f(torch::Tensor x);"\n'
                'ext = load_inline(name="ext1", cpp_sources=CPP, cuda_sources=[CUDA], functions=["f"],\n'
                '                  extra_cuda_cflags=["-O3"], verbose=True, build_directory="/tmp/x")\n')
        (c,) = self.calls(body)
        self.assertEqual(c["name"], "ext1")
        self.assertEqual(c["cpp_sources"], ["torch::Tensor f(torch::Tensor x);"])
        self.assertEqual(c["cuda_sources"], ["__global__ void k() {}\nvoid launch();"])
        self.assertEqual(c["functions"], [["f", "f"]])
        self.assertEqual(c["extra_cuda_cflags"], ["-O3"])

    def test_the_key_is_the_same_for_the_same_call_at_run_time(self):
        body = ('import torch.utils.cpp_extension as ce\n'
                'ext = ce.load_inline("e", ["int f();"], functions="f")\n')
        (c,) = self.calls(body)
        runtime = kc.normalise_load_inline({"name": "e", "cpp_sources": ["int f();"], "functions": "f"})
        self.assertEqual(kc.load_inline_key(c), kc.load_inline_key(runtime))
        other = kc.normalise_load_inline({"name": "e", "cpp_sources": ["int g();"], "functions": "f"})
        self.assertNotEqual(kc.load_inline_key(c), kc.load_inline_key(other))

    def test_dynamic_arguments_are_refused(self):
        for expr in ('"x" * 2', 'str(3)', '"%d" % 3', 'f"{len([])}"', 'SRC.upper()'):
            body = ('from torch.utils.cpp_extension import load_inline\nSRC = "a"\n'
                    'ext = load_inline(name="e", cpp_sources=[%s])\n' % expr)
            with self.assertRaises(kc.BuildError, msg=expr) as e:
                self.calls(body)
            self.assertIn("must be constants", str(e.exception))

    def test_a_name_bound_twice_is_not_a_constant(self):
        body = ('from torch.utils.cpp_extension import load_inline\nSRC = "a"\nSRC = "b"\n'
                'ext = load_inline(name="e", cpp_sources=[SRC])\n')
        with self.assertRaises(kc.BuildError):
            self.calls(body)

    def test_kwargs_and_bad_names(self):
        with self.assertRaises(kc.BuildError):
            self.calls('from torch.utils.cpp_extension import load_inline\nk = {}\next = load_inline(**k)\n')
        with self.assertRaises(kc.BuildError):
            self.calls('from torch.utils.cpp_extension import load_inline\next = load_inline(name="a b", cpp_sources="x")\n')


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=1)
