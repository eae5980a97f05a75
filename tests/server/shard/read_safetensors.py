"""Independent .safetensors reader for the export test (stdlib + numpy).

Usage: read_safetensors.py FILE
Prints the metadata, then one line per tensor, sorted by name:
  NAME DTYPE SHAPE HEX
where SHAPE is comma-separated and HEX is the tensor's raw little-endian bytes.
Checks the layout the format requires: header length, JSON header, offsets
that tile the byte buffer exactly, sizes that match dtype and shape.
"""
import json
import struct
import sys

import numpy as np

DTYPES = {"F32": np.dtype("<f4"), "U64": np.dtype("<u8")}


def main(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    buf = data[8 + n:]
    meta = header.pop("__metadata__", {})
    print("metadata", json.dumps(meta, sort_keys=True))
    spans = []
    for name in sorted(header):
        entry = header[name]
        dtype = DTYPES[entry["dtype"]]
        shape = entry["shape"]
        begin, end = entry["data_offsets"]
        count = int(np.prod(shape)) if shape else 1
        assert end - begin == count * dtype.itemsize, name
        array = np.frombuffer(buf[begin:end], dtype=dtype).reshape(shape)
        spans.append((begin, end))
        print(name, entry["dtype"], ",".join(str(d) for d in shape), array.tobytes().hex())
    spans.sort()
    pos = 0
    for begin, end in spans:
        assert begin == pos, "offsets must tile the buffer"
        pos = end
    assert pos == len(buf), "trailing bytes after the last tensor"


if __name__ == "__main__":
    main(sys.argv[1])
