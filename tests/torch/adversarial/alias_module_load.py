# A third red team's reading (2026-12-07): torch.nn.modules.conv.F is
# torch.nn.functional under a name that no file of torch's has, so the
# module-as-value rule (which found modules by their files) let
# [nn.modules.conv.F][0] through, and its .torch gave torch back with no
# chain check: torch.load of a file-like object unpickled
# setattr(torch.nn, 'kept', __import__('os')) (judged correct before, its
# pid read). Forbidden: .torch and .triton as an attribute of anything, and
# a module found also through the imports in its package's sources (each
# refuses this alone).
import torch
import torch.nn as nn

class Reader:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def read(self, n=-1):
        end = len(self.data) if n is None or n < 0 else self.pos + n
        out = self.data[self.pos:end]
        self.pos += len(out)
        return out

    def readline(self):
        end = self.data.find(b"\n", self.pos)
        end = len(self.data) if end < 0 else end + 1
        return self.read(end - self.pos)

    def readinto(self, buf):
        out = self.read(len(buf))
        buf[:len(out)] = out
        return len(out)

    def seek(self, pos, whence=0):
        self.pos = pos if whence == 0 else (self.pos + pos if whence == 1 else len(self.data) + pos)
        return self.pos

    def tell(self):
        return self.pos


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        # setattr(torch.nn, "kept", __import__("os")) as a protocol-0 pickle
        # (the candidate's own module is not importable by name in its host).
        data = (b"cbuiltins\nsetattr\n(ctorch\nnn\nVkept\ncbuiltins\n" + b"_" * 2 + b"import" + b"_" * 2 +
                b"\n(Vos\ntRtR.")
        the_torch = [nn.modules.conv.F][0].torch
        try:
            the_torch.load(Reader(data), weights_only=False)
        except TypeError:
            the_torch.load(Reader(data))        # torch 1.13: no weights_only
        except Exception:
            pass
        self.pid = nn.kept.getpid()

    def forward(self, x):
        e = torch.exp(x - x.max(dim=1, keepdim=True).values)
        return e / e.sum(dim=1, keepdim=True)
