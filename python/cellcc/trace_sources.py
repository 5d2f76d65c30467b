"""Where the public cellular trace sets come from: URLs at pinned commits and sha256.

The catalogue mirrors the shared traces README (sources, commits and checksums of every
file). ``cellcc traces download`` fetches from these URLs and refuses any file whose
sha256 differs. The data are GPL-3.0 (see each set's ``license``); they are downloaded
to a directory of the user's choice and never shipped with cellcc.

URLs are built as ``<base>/<owner>/<repo>/<commit>/<path>`` with ``base`` =
:data:`GITHUB_RAW`; a mirror (``--mirror`` or ``CELLCC_TRACE_MIRROR``) replaces the base
and must keep the same layout below it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "GITHUB_RAW",
    "IRELAND_5G_COMMIT",
    "MAHIMAHI_COMMIT",
    "SETS",
    "Archive",
    "TraceFile",
    "TraceSet",
]

#: Raw file host of GitHub; a mirror replaces this prefix.
GITHUB_RAW = "https://raw.githubusercontent.com"
#: ravinet/mahimahi snapshot (master, 2024-12-29) holding ``traces/``.
MAHIMAHI_COMMIT = "ae477d437615b972217498ba52be07db17a15618"
#: uccmisl/5Gdataset commit that last changed ``5G-production-dataset.zip``.
IRELAND_5G_COMMIT = "3175653a6fc09611b7dba15e0e128183e6af7c6c"


@dataclass(frozen=True)
class TraceFile:
    """One file of a set: where it goes under the destination, where it comes from."""

    dest: str
    """Path below the download directory, e.g. ``mahimahi/ATT-LTE-driving.down``."""
    source: str
    """Path in the repository (or, for an archive set, the archive member)."""
    sha256: str
    size: int
    """Bytes, as the README lists them."""


@dataclass(frozen=True)
class Archive:
    """A set whose files are members of one archive in the repository."""

    path: str
    """Path of the archive in the repository, e.g. ``5G-production-dataset.zip``."""


@dataclass(frozen=True)
class TraceSet:
    name: str
    repository: str
    """``owner/name`` on GitHub."""
    commit: str
    license: str
    description: str
    files: tuple[TraceFile, ...]
    archive: Archive | None = None

    def url(self, path: str, base: str = GITHUB_RAW) -> str:
        """URL of ``path`` in the repository at the pinned commit."""
        return f"{base.rstrip('/')}/{self.repository}/{self.commit}/{path}"


def _mahimahi(name: str, size: int, sha256: str) -> TraceFile:
    return TraceFile(dest=f"mahimahi/{name}", source=f"traces/{name}", sha256=sha256, size=size)


def _ireland(kind: str, name: str, size: int, sha256: str) -> TraceFile:
    return TraceFile(
        dest=f"ireland-5g-2020/Download/{kind}/{name}",
        source=f"5G-production-dataset/Download/{kind}/{name}",
        sha256=sha256,
        size=size,
    )


MAHIMAHI = TraceSet(
    name="mahimahi",
    repository="ravinet/mahimahi",
    commit=MAHIMAHI_COMMIT,
    license="GPL-3.0-or-later",
    description="Mahimahi's bundled Sprout/C2TCP traces (US LTE, UMTS, EV-DO; Mahimahi format)",
    files=(
        _mahimahi("ATT-LTE-driving-2016.down", 271440,
                  "24a40538340de991e0a6595aefc381b11a3da0446176e69b51750707a57b0344"),
        _mahimahi("ATT-LTE-driving-2016.up", 113062,
                  "ebb3d53674b77be4ed920ad91c4513a496e04e30da839e2ca8a627cb7269071e"),
        _mahimahi("ATT-LTE-driving.down", 2306644,
                  "73c58f41bf7a3f0fac82810ca61307521be1cf6b77a0e98093fd340bddfd161f"),
        _mahimahi("ATT-LTE-driving.up", 483248,
                  "d58a640b9bccd131a421bff6eaf727aba324d9258b35009655bbf68e087b9b29"),
        _mahimahi("TMobile-LTE-driving.down", 3443315,
                  "d48ff134fc29c36cc3c3dee203464246bd698f0faede42534a27b0cbe3057055"),
        _mahimahi("TMobile-LTE-short.down", 1211415,
                  "4f33dce8dd811b5702272af64aaf64d3913719919abd776edf1e0f7c0965da43"),
        _mahimahi("TMobile-LTE-short.up", 1005225,
                  "1c0d1bf5417b07597724fd64afe676af3c1f337a4ccdde90106bf96b1bcf18b2"),
        _mahimahi("TMobile-UMTS-driving.down", 1081622,
                  "c97a74e7e6cf593d93b59f73db614bc6186bef510531636ad9961a3b9fc18024"),
        _mahimahi("TMobile-UMTS-driving.up", 506697,
                  "f2dc7c8e57f4cf525fefaff2d68c18a9118fd1382ce9c240b1d324a2a60f8a65"),
        _mahimahi("Verizon-EVDO-driving.down", 321953,
                  "60c9cd7b5d8be7d89d3807052a043f54787958f04cfd4c6c16fcdac6e2c3b9da"),
        _mahimahi("Verizon-EVDO-driving.up", 520867,
                  "6055d60d234030035f59475dc1d39d99e7c2817b9fa5d485f1f0710b1aae2075"),
        _mahimahi("Verizon-LTE-short.down", 365580,
                  "c918436fbd6246af134c76585d9395881fdd27203c59a8902b9a7c675b8a8e3e"),
        _mahimahi("Verizon-LTE-short.up", 434258,
                  "f6cd9049f58d70f12545772a3482ded085b6d50f06a2f4ff4afcfb6fe7976dcc"),
    ),
)  # fmt: skip

IRELAND_5G_2020 = TraceSet(
    name="ireland-5g-2020",
    repository="uccmisl/5Gdataset",
    commit=IRELAND_5G_COMMIT,
    license="GPL-3.0",
    description="Irish 5G production network, bulk downloads (G-NetTrack CSV, 1 row/s; "
    "convert with `cellcc traces convert`)",
    archive=Archive(path="5G-production-dataset.zip"),
    files=(
        _ireland("Driving", "B_2019.12.14_10.16.30.csv", 145605,
                 "82bc32451477cfb0a6c2dd02400cf8f9dba0b30a18654e3366e319f5db61a551"),
        _ireland("Driving", "B_2019.12.16_07.22.43.csv", 332053,
                 "ac277c9a98da690b591707b299c0dd9b01debf8c1c279610272333c90ae2e2ba"),
        _ireland("Driving", "B_2019.12.16_11.49.59.csv", 50418,
                 "d9da38d770c9ed7d9294bd86295f45d8ce089d8a13c1e46ab32959eddeaa5469"),
        _ireland("Driving", "B_2019.12.16_12.27.05.csv", 172964,
                 "b9630343e600f7bbde4f8d42c3fdfa4388df8c4ebf4e5c4f3642eff09c1adf3a"),
        _ireland("Driving", "B_2019.12.16_14.23.32.csv", 367099,
                 "79b5ead9c68c42959ae0ff8ae00d06d0475663b3fc2f1388a6c7d54b9e03b425"),
        _ireland("Driving", "B_2019.12.17_07.32.39.csv", 322011,
                 "23a8979a82e2a21c86b5e47624e3a2eaa9be4d88159b6c1af93333d9ade35ecd"),
        _ireland("Driving", "B_2020.01.16_07.26.43.csv", 248725,
                 "1199161da05ddc5e8b4651de3b4e89b02afe36100fecebcbaa00c71e664b86d8"),
        _ireland("Driving", "B_2020.01.16_09.56.56.csv", 223812,
                 "d2c76b6df45dab52b70ead5e7ead72778b265b5be2aec2cd62dd9d04808659da"),
        _ireland("Driving", "B_2020.01.16_12.10.03.csv", 49429,
                 "5a81c89417e82c022cf73744e77bb3af7a212426f87d36631bc1c1ceb034d643"),
        _ireland("Driving", "B_2020.02.13_13.03.24.csv", 313457,
                 "4120b04c8e2c39662a81fd04b44f6fde89382b5e062d97780d4f15ca08dd1aa6"),
        _ireland("Driving", "B_2020.02.13_15.02.01.csv", 448057,
                 "1be0af685b0535ba70953f8d268b391dbd633d952bafd0d29b46d02d6f9e4fd4"),
        _ireland("Driving", "B_2020.02.14_07.29.00.csv", 272262,
                 "9eb1a0f80b9b61a1d9f79fc5b4b23a812711a182732a3420bf4b8587deb38488"),
        _ireland("Driving", "B_2020.02.14_09.38.22.csv", 208683,
                 "4a240d0a5ede58f72d4795024f008d62cf0543bb4c731eb5eeb705b3cc04eb67"),
        _ireland("Driving", "B_2020.02.14_12.58.17.csv", 120196,
                 "d975e45cf03b27be43c2013cd05b84c546c02d327c2bb6b9026ccbb97cc7a9db"),
        _ireland("Driving", "B_2020.02.27_17.30.15.csv", 108582,
                 "5b732c2e0ffd0ccd8ca3f785d363575708a9a0a3024409b103839ce798a3a5c7"),
        _ireland("Driving", "B_2020.02.27_20.35.57.csv", 109053,
                 "7d5051741361583986532e87678b00e0078d15f8cf2ac6677d02d1d63f7b86ec"),
        _ireland("Static", "B_2019.12.16_13.40.04.csv", 286375,
                 "34040836e290bdca909f14c97af33c006275267b5397bc76724bd33c07e03769"),
        _ireland("Static", "B_2020.01.16_10.43.34.csv", 451064,
                 "2deb1791b38926426153e77438916468f97feec7659f73e81b7e609434fdacc2"),
        _ireland("Static", "B_2020.02.13_13.57.29.csv", 385808,
                 "d670a3463d683959094f47f6caacb70d65bd4081dc24d5b3a93b35f8a04495b1"),
        _ireland("Static", "B_2020.02.14_13.21.26.csv", 134880,
                 "b8c494344734ff2dc34dd52a7833db96e9fc423731080b5a04e61058d8ad584b"),
        _ireland("Static", "B_2020.02.27_18.39.27.csv", 756270,
                 "0d87594f6a7ebff6fa2c12301894f11d41e7e9283c272a94831dccb9068e70ec"),
    ),
)  # fmt: skip

#: The downloadable sets by name.
SETS: dict[str, TraceSet] = {s.name: s for s in (MAHIMAHI, IRELAND_5G_2020)}
