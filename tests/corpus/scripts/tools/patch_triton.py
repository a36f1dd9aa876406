import sys

path = sys.argv[1]
text = open(path).read()
text = text.replace("num_warps = 4", "num_warps = 8")
open(path, "w").write(text)
