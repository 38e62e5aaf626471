import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class PosEnc(nn.Module):
    def __init__(self, d, n=100):
        super().__init__()
        pe = torch.zeros(n, d)
        pos = torch.arange(0, n, dtype=torch.float).unsqueeze(1)
        div = torch.exp(torch.arange(0, d, 2).float() * (-math.log(10000.0) / d))
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        return x + self.pe[:, : x.size(1)]


class TX(nn.Module):
    def __init__(self, v=50, d=32):
        super().__init__()
        self.emb = nn.Embedding(v, d)
        self.pos = PosEnc(d)
        layer = nn.TransformerEncoderLayer(
            d, 4, 64, dropout=0.1, batch_first=True, norm_first=True, activation="gelu"
        )
        self.enc = nn.TransformerEncoder(layer, 2)
        self.out = nn.Linear(d, v)

    def forward(self, x, pad):
        mask = nn.Transformer.generate_square_subsequent_mask(x.size(1))
        h = self.enc(
            self.pos(self.emb(x) * math.sqrt(32)),
            mask=mask,
            src_key_padding_mask=pad,
            is_causal=True,
        )
        return self.out(h)


m = TX()
opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 5))
x = torch.randint(1, 50, (4, 12))
pad = torch.zeros(4, 12, dtype=torch.bool)
pad[:, 10:] = True
for i in range(5):
    logits = m(x, pad)
    loss = F.cross_entropy(logits[:, :-1].reshape(-1, 50), x[:, 1:].reshape(-1), ignore_index=0)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
print(round(loss.item(), 2))
q = k = v = torch.randn(2, 4, 6, 8)
o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
att = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(8)
att = att.masked_fill(torch.triu(torch.ones(6, 6, dtype=torch.bool), 1), float("-inf")).softmax(-1)
print(torch.allclose(o, att @ v, atol=1e-5))
mha = nn.MultiheadAttention(16, 2, batch_first=True)
a, w = mha(torch.randn(2, 5, 16), torch.randn(2, 5, 16), torch.randn(2, 5, 16), need_weights=True)
print(a.shape, w.shape)
with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
    y = m.out(torch.randn(3, 32))
print(y.dtype)
print(sum(p.numel() for p in m.parameters()))
