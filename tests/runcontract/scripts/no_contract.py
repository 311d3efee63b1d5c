"""A script that knows nothing of the run directory: it trains and prints, and leaves no result."""

print("epoch 1: loss 0.693")
print("training finished")
