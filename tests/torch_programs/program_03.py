import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical, Independent, Normal, kl_divergence

torch.manual_seed(0)


class VAE(nn.Module):
    def __init__(self, d=32, z=4):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(d, 64), nn.LeakyReLU(0.2), nn.Linear(64, 2 * z))
        self.dec = nn.Sequential(nn.Linear(z, 64), nn.SiLU(), nn.Linear(64, d))

    def forward(self, x):
        mu, logvar = self.enc(x).chunk(2, dim=-1)
        q = Independent(Normal(mu, torch.exp(0.5 * logvar)), 1)
        z = q.rsample()
        p = Independent(Normal(torch.zeros_like(mu), torch.ones_like(mu)), 1)
        kl = kl_divergence(q, p).mean()
        logits = self.dec(z)
        rec = F.binary_cross_entropy_with_logits(logits, x, reduction="sum") / x.shape[0]
        return rec + kl, rec, kl


x = (torch.rand(256, 32) > 0.5).float()
m = VAE()
opt = torch.optim.Adam(m.parameters(), lr=1e-3)
for i in range(50):
    loss, rec, kl = m(x)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"{loss.item():.2f} {rec.item():.2f} {kl.item():.3f}")
c = Categorical(logits=torch.randn(4, 3, requires_grad=True))
a = c.sample()
lp = c.log_prob(a)
(-lp.sum() - c.entropy().sum()).backward()
print(a.shape, lp.shape)
n = torch.distributions.MultivariateNormal(torch.zeros(3), scale_tril=torch.eye(3))
print(n.log_prob(torch.ones(3)).item())
