"""An inference-only script (a model run over a loader, no optimizer): nothing the no-edit mode can call a step."""

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2)).eval()
loader = torch.utils.data.DataLoader(torch.randn(64, 16), batch_size=8)
with torch.no_grad():
    predicted = torch.cat([model(x).argmax(1) for x in loader])
print(f"predicted {len(predicted)} rows")
