"""Shared writers of the fixture scripts: 8-significant-digit rounding and the JSON layout every
`expected.json` uses (one key per line, each list of scalars on one line)."""
import json


def r8(x):
    """A float (or nested lists of floats) rounded to 8 significant digits; None stays None."""
    if isinstance(x, (list, tuple)):
        return [r8(v) for v in x]
    if x is None:
        return None
    return float(f"{float(x):.8g}")


def dump(obj, indent=0):
    """JSON with one key per line and every list of scalars on one line."""
    pad = " " * indent
    if isinstance(obj, dict):
        items = [f'{pad} {json.dumps(k)}: {dump(v, indent + 1).lstrip()}' for k, v in obj.items()]
        return pad + "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list) and any(isinstance(v, (list, dict)) for v in obj):
        return pad + "[\n" + ",\n".join(dump(v, indent + 1) for v in obj) + "\n" + pad + "]"
    return pad + json.dumps(obj, separators=(",", ":"))
