"""The saved chunk table: one JSON record per line, with the byte offset of every line and the
list of chunk ids beside it, so a saved corpus opens without parsing its chunks; each chunk is
read when it is asked for."""

from __future__ import annotations

import json
import mmap
from pathlib import Path
from typing import Iterator, Sequence, overload

import numpy as np

from ragshield.retrieval.chunking import Chunk

CHUNKS_FILE = "chunks.jsonl"
OFFSETS_FILE = "chunk_offsets.npy"
IDS_FILE = "chunk_ids.json"
FILES = (CHUNKS_FILE, OFFSETS_FILE, IDS_FILE)


def write_chunk_table(chunks: Sequence[Chunk], folder: Path) -> None:
    offsets = [0]
    with open(folder / CHUNKS_FILE, "wb") as out:
        for chunk in chunks:
            line = (json.dumps(chunk.to_record(), ensure_ascii=False) + "\n").encode("utf-8")
            out.write(line)
            offsets.append(offsets[-1] + len(line))
    np.save(folder / OFFSETS_FILE, np.array(offsets, dtype=np.int64))
    (folder / IDS_FILE).write_text(json.dumps([chunk.id for chunk in chunks], ensure_ascii=False))


class ChunkTable(Sequence[Chunk]):
    def __init__(self, folder: Path):
        with open(folder / CHUNKS_FILE, "rb") as file:
            self._data = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        self._offsets = np.load(folder / OFFSETS_FILE, mmap_mode="r")
        self.ids: list[str] = json.loads((folder / IDS_FILE).read_text(encoding="utf-8"))

    def __len__(self) -> int:
        return len(self._offsets) - 1

    @overload
    def __getitem__(self, row: int) -> Chunk: ...

    @overload
    def __getitem__(self, row: slice) -> list[Chunk]: ...

    def __getitem__(self, row: int | slice) -> Chunk | list[Chunk]:
        if isinstance(row, slice):
            return [self[i] for i in range(*row.indices(len(self)))]
        if not -len(self) <= row < len(self):
            raise IndexError(f"chunk row {row} out of range (0..{len(self) - 1})")
        row %= len(self)
        line = self._data[int(self._offsets[row]) : int(self._offsets[row + 1])]
        return Chunk.from_record(json.loads(line))

    def __iter__(self) -> Iterator[Chunk]:
        return (self[row] for row in range(len(self)))
