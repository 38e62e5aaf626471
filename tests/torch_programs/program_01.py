import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset, random_split

torch.manual_seed(0)
X = torch.randn(512, 20)
w = torch.randn(20, 1)
y = (X @ w + 0.1 * torch.randn(512, 1) > 0).float().squeeze(1).long()
ds = TensorDataset(X, y)
train, val = random_split(ds, [400, 112], generator=torch.Generator().manual_seed(1))
dl = DataLoader(train, batch_size=32, shuffle=True, drop_last=False, num_workers=0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.seq = nn.Sequential(
            nn.Linear(20, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 2)
        )

    def forward(self, x):
        return self.seq(x)


m = Net()
opt = torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=1e-4)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=10 * len(dl))
crit = nn.CrossEntropyLoss(label_smoothing=0.05)
for epoch in range(10):
    m.train()
    tot = 0.0
    for xb, yb in dl:
        opt.zero_grad(set_to_none=True)
        out = m(xb)
        loss = crit(out, yb)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        sched.step()
        tot += loss.item() * xb.size(0)
    m.eval()
    with torch.no_grad():
        xs = torch.stack([val[i][0] for i in range(len(val))])
        ys = torch.tensor([val[i][1] for i in range(len(val))])
        acc = (m(xs).argmax(dim=1) == ys).float().mean().item()
    print(f"epoch {epoch} loss {tot / len(train):.4f} acc {acc:.3f}")
torch.save(m.state_dict(), "m.pt")
m2 = Net()
m2.load_state_dict(torch.load("m.pt", weights_only=True))
print(sum(p.numel() for p in m2.parameters() if p.requires_grad))
