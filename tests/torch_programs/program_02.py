import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

torch.manual_seed(0)
text = "hello world this is a tiny corpus for a character level language model " * 20
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text], dtype=torch.long)


class CharLM(nn.Module):
    def __init__(self, v, e=16, h=32):
        super().__init__()
        self.emb = nn.Embedding(v, e, padding_idx=0)
        self.rnn = nn.LSTM(e, h, num_layers=2, batch_first=True, dropout=0.1)
        self.head = nn.Linear(h, v)

    def forward(self, x, lengths=None, state=None):
        e = self.emb(x)
        if lengths is not None:
            p = pack_padded_sequence(e, lengths, batch_first=True, enforce_sorted=False)
            o, state = self.rnn(p, state)
            o, _ = pad_packed_sequence(o, batch_first=True)
        else:
            o, state = self.rnn(e, state)
        return self.head(o), state


m = CharLM(len(chars))
opt = torch.optim.Adam(m.parameters(), lr=3e-3)
for step in range(30):
    idx = torch.randint(0, len(data) - 33, (8,))
    x = torch.stack([data[i : i + 32] for i in idx])
    y = torch.stack([data[i + 1 : i + 33] for i in idx])
    logits, _ = m(x)
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(m.parameters(), 5.0)
    opt.step()
print("loss", round(loss.item(), 3))
seqs = [data[:5], data[5:12], data[12:15]]
lengths = torch.tensor([len(s) for s in seqs])
padded = pad_sequence(seqs, batch_first=True)
out, (h, c) = m(padded, lengths)
print(out.shape, h.shape, c.shape)
m.eval()
with torch.no_grad():
    x = data[:1].unsqueeze(0)
    st = None
    res = []
    for _ in range(20):
        logits, st = m(x, state=st)
        probs = F.softmax(logits[:, -1] / 0.8, dim=-1)
        x = torch.multinomial(probs, num_samples=1)
        res.append(chars[x.item()])
print(len("".join(res)))
gru = nn.GRU(4, 8, bidirectional=True)
o, hn = gru(torch.randn(5, 3, 4))
print(o.shape, hn.shape)
cell = nn.LSTMCell(4, 6)
hx = torch.zeros(3, 6)
cx = torch.zeros(3, 6)
for t in range(5):
    hx, cx = cell(torch.randn(3, 4), (hx, cx))
hx.sum().backward()
print(cell.weight_ih.grad.shape)
