import torch
import torch.nn as nn
from torch.func import functional_call, grad, hessian, jacrev, vmap

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 1))
params = {k: v.detach() for k, v in model.named_parameters()}


def loss_fn(p, x, y):
    out = functional_call(model, p, (x.unsqueeze(0),))
    return (out.squeeze() - y) ** 2


X = torch.randn(6, 5)
Y = torch.randn(6)
g = vmap(grad(loss_fn), in_dims=(None, 0, 0))(params, X, Y)
print({k: tuple(v.shape) for k, v in g.items()})
f = lambda x: (x.sin() * x).sum()
print(jacrev(lambda x: x.sin() * x)(torch.ones(3)).shape, hessian(f)(torch.ones(3)).shape)
print(vmap(torch.dot)(torch.randn(4, 3), torch.randn(4, 3)).shape)
