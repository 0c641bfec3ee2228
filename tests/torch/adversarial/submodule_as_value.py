# A module imported by `from torch.nn import functional` (or a chain that is
# a module: torch.nn, an alias bound to torch.cuda) passed through a call
# came back as a value whose attributes no chain check saw: the checks
# refused `import`ed modules as values only. From there torch.load (an
# unpickler, refused by name in a chain) read a file-like object's pickle:
# GLOBAL os getpid, run (judged correct before; torch.load then finds no
# magic number and raises, which the candidate catches). Forbidden: a name
# or chain that is a module is used only as the base of an attribute; and
# (since a third red team) .torch is refused as an attribute of anything:
# each refuses this alone.
import torch
import torch.nn as nn
from torch.nn import functional


class _Bytes:
    """The least of a file that torch.load and pickle read."""

    def __init__(self, data):
        self.data = data
        self.at = 0

    def read(self, n=-1):
        end = len(self.data) if n is None or n < 0 else min(len(self.data), self.at + n)
        got = self.data[self.at:end]
        self.at = end
        return got

    def readline(self):
        end = self.data.find(b"\n", self.at)
        return self.read(len(self.data) if end < 0 else end + 1 - self.at)

    def readinto(self, buf):
        got = self.read(len(buf))
        buf[:len(got)] = got
        return len(got)

    def seek(self, offset, whence=0):
        self.at = offset if whence == 0 else (self.at + offset if whence == 1 else len(self.data) + offset)
        return self.at

    def tell(self):
        return self.at


def _same(m):
    return m


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        try:
            _same(functional).torch.load(_Bytes(b"cos\ngetpid\n(tR."), weights_only=False)
        except RuntimeError:
            pass

    def forward(self, x):
        e = torch.exp(x - x.max(dim=1, keepdim=True).values)
        return e / e.sum(dim=1, keepdim=True)
