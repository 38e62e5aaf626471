import torch
import torch.nn as nn
from torch.nn.utils import parametrize
from torch.nn.utils.parametrizations import spectral_norm, weight_norm

torch.manual_seed(0)
lin = weight_norm(nn.Linear(4, 3))
print(
    sorted(n for n, _ in lin.named_parameters()),
    type(lin).__name__,
    parametrize.is_parametrized(lin),
    parametrize.type_before_parametrizations(lin).__name__,
)
x = torch.randn(2, 4)
lin(x).sum().backward()
print(
    lin.parametrizations.weight.original0.grad.shape,
    lin.parametrizations.weight.original1.grad.shape,
)
print(sorted(lin.state_dict()))


class Sym(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)

    def right_inverse(self, A):
        return A.triu()


m = nn.Linear(3, 3)
parametrize.register_parametrization(m, "weight", Sym())
print(torch.allclose(m.weight, m.weight.T))
m.weight = torch.eye(3) * 2
print(m.weight.diag().tolist())
with parametrize.cached():
    a = m.weight
    b = m.weight
print(a is b)
parametrize.remove_parametrizations(m, "weight")
print(type(m).__name__, isinstance(m.weight, nn.Parameter))
sn = spectral_norm(nn.Linear(5, 4))
for _ in range(20):
    sn(torch.randn(2, 5))
print(round(torch.linalg.matrix_norm(sn.weight, 2).item(), 3), sorted(k for k in sn.state_dict()))
old = nn.utils.spectral_norm(nn.Conv2d(2, 3, 3))
for _ in range(30):
    old(torch.randn(1, 2, 5, 5))
print(
    sorted(k for k in old.state_dict()),
    round(torch.linalg.matrix_norm(old.weight.reshape(3, -1), 2).item(), 3),
)
nn.utils.remove_spectral_norm(old)
print(sorted(k for k in old.state_dict()))
import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    wn = nn.utils.weight_norm(nn.Linear(3, 2))
print(sorted(k for k in wn.state_dict()), wn(torch.randn(1, 3)).shape)
nn.utils.remove_weight_norm(wn)
print(sorted(k for k in wn.state_dict()))
