"""Annotation codes, beat classes (AAMI EC57) and the rhythm vocabulary, as lookup tables.

Everything is a table indexed by the MIT annotation code so that labelling is one numpy gather
per record, never a Python loop per beat.
"""

from __future__ import annotations

import numpy as np

# MIT/WFDB annotation codes (ecgcodes.h) -> mnemonic symbol.
CODE_SYMBOLS: dict[int, str] = {
    0: " ", 1: "N", 2: "L", 3: "R", 4: "a", 5: "V", 6: "F", 7: "J", 8: "A", 9: "S", 10: "E",
    11: "j", 12: "/", 13: "Q", 14: "~", 16: "|", 18: "s", 19: "T", 20: "*", 21: "D", 22: '"',
    23: "=", 24: "p", 25: "B", 26: "^", 27: "t", 28: "+", 29: "u", 30: "?", 31: "!", 32: "[",
    33: "]", 34: "e", 35: "n", 36: "@", 37: "x", 38: "f", 39: "(", 40: ")", 41: "r",
}
RHYTHM_CODE = 28  # '+': rhythm change, the new rhythm is in aux_note, e.g. "(AFIB"

# Symbols that mark a QRS complex (WFDB's isqrs set).
BEAT_SYMBOLS = "NLRBAaJSVrFejnE/fQ?"

BEAT_CLASSES = ("N", "S", "V", "F", "Q")
AAMI: dict[str, int] = {}
for _cls, _symbols in zip(BEAT_CLASSES, ("NLRej", "AaJS", "VE", "F", "/fQ"), strict=True):
    for _s in _symbols:
        AAMI[_s] = BEAT_CLASSES.index(_cls)

# Rhythm vocabulary: a small set of classes; every other rhythm string maps to "other".
RHYTHM_CLASSES = ("N", "AFIB", "AFL", "SV", "V", "other")
AF_RHYTHMS = (RHYTHM_CLASSES.index("AFIB"), RHYTHM_CLASSES.index("AFL"))  # whose N beats look premature
AF_GROUP = "N in AF"  # train.af_group's loss weight group: N beats inside them
RHYTHM_MAP: dict[str, str] = {
    "N": "N", "SBR": "N",
    "AFIB": "AFIB",
    "AFL": "AFL",
    "SVTA": "SV", "AB": "SV", "NOD": "SV", "PREX": "SV", "AT": "SV",
    "VT": "V", "VFL": "V", "VF": "V", "IVR": "V",
}


def _tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    is_beat = np.zeros(64, dtype=bool)
    aami = np.full(64, -1, dtype=np.int8)
    token_class = np.full(64, -1, dtype=np.int8)
    for code, sym in CODE_SYMBOLS.items():
        if sym in BEAT_SYMBOLS:
            is_beat[code] = True
            aami[code] = AAMI.get(sym, -1)
            token_class[code] = AAMI.get(sym, len(BEAT_CLASSES))  # unclassified beats keep a token
    return is_beat, aami, token_class


IS_BEAT, AAMI_OF_CODE, TOKEN_CLASS_OF_CODE = _tables()
TOKEN_CLASS_NAMES = (*BEAT_CLASSES, "other")  # beats tokenizer: "other" = B r n ?
N_TOKEN_CLASSES = len(TOKEN_CLASS_NAMES)


def rhythm_class(aux: str) -> int:
    """Map a rhythm aux_note such as "(AFIB" to an index of RHYTHM_CLASSES; -1 if it is no rhythm."""
    text = aux.strip("\x00 ").strip()
    if not text.startswith("("):
        return -1
    name = text[1:].strip()
    return RHYTHM_CLASSES.index(RHYTHM_MAP.get(name, "other"))


def symbols_to_codes(symbols: list[str] | np.ndarray) -> np.ndarray:
    """Annotation codes for a sequence of symbols (used by the synthetic generator and wfdb input)."""
    lookup = {sym: code for code, sym in CODE_SYMBOLS.items()}
    try:
        return np.array([lookup[s] for s in symbols], dtype=np.uint8)
    except KeyError as exc:
        raise ValueError(f"unknown annotation symbol {exc.args[0]!r}") from None
