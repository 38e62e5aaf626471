import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class CNN(nn.Module):
    def __init__(self, nc=10):
        super().__init__()
        self.features = nn.ModuleList(
            [nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 16, 3, stride=2, padding=1)]
        )
        self.bns = nn.ModuleList([nn.BatchNorm2d(8), nn.BatchNorm2d(16)])
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, nc)

    def forward(self, x):
        for conv, bn in zip(self.features, self.bns):
            x = F.relu(bn(conv(x)), inplace=True)
            x = F.max_pool2d(x, 2)
        return self.fc(torch.flatten(self.pool(x), 1))


m = CNN()
x = torch.randn(16, 3, 32, 32)
y = torch.randint(0, 10, (16,))
opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
for i in range(6):
    out = m(x)
    loss = F.cross_entropy(out, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
print(round(loss.item(), 3), sched.get_last_lr())
top5 = out.topk(5, dim=1).indices
correct = top5.eq(y.view(-1, 1).expand_as(top5)).any(dim=1).float().sum().item()
print("top5", correct)
pred = out.argmax(1)
cm = torch.bincount(y * 10 + pred, minlength=100).reshape(10, 10)
print(cm.sum().item(), cm.diag().sum().item())
print(m.state_dict()["bns.0.running_mean"].shape, m.bns[0].num_batches_tracked.item())
n_params = sum(p.numel() for p in m.parameters())
print(n_params)
img = torch.rand(1, 3, 8, 8)
up = F.interpolate(img, scale_factor=2, mode="bilinear", align_corners=False)
print(up.shape, F.pad(img, (1, 1, 2, 2), mode="reflect").shape)
grid = F.affine_grid(torch.eye(2, 3).unsqueeze(0), (1, 3, 8, 8), align_corners=False)
print(F.grid_sample(img, grid, align_corners=False).sub(img).abs().max().item() < 1e-5)
m.apply(
    lambda mod: (
        nn.init.kaiming_normal_(mod.weight, mode="fan_out", nonlinearity="relu")
        if isinstance(mod, nn.Conv2d)
        else None
    )
)
print(next(m.parameters()).dtype, m.training)
m.half()
print(next(m.parameters()).dtype)
m.float()
print(m.fc.weight.requires_grad, [n for n, _ in m.named_children()])
