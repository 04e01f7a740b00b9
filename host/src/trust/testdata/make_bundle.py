"""Writes cryptography-bundle.json: a Sigstore bundle (v0.3) made by another implementation.

The key, the in-toto statement (cosign's image signature predicate, its subject naming DIGEST
with an annotation), DSSE's pre-authentication encoding and the ECDSA P-256 signature over it
(DER, SHA-256) are made here with the PyPI `cryptography` package (OpenSSL underneath) and the
standard library, not with Weir's code, so that the verifier's test shows it reads a bundle
another implementation writes. Run once with `pip install cryptography` and
`python make_bundle.py`; the output is checked in.
"""

import base64
import hashlib
import json

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

DIGEST = "sha256:" + "c3" * 32
PAYLOAD_TYPE = "application/vnd.in-toto+json"


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


key = ec.generate_private_key(ec.SECP256R1())
statement = json.dumps(
    {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [
            {
                "digest": {"sha256": DIGEST.removeprefix("sha256:")},
                "annotations": {"team": "payments"},
            }
        ],
        "predicateType": "https://sigstore.dev/cosign/sign/v1",
        "predicate": {},
    },
    separators=(",", ":"),
).encode()
signature = key.sign(pae(PAYLOAD_TYPE, statement), ec.ECDSA(hashes.SHA256()))
public = key.public_key()
der = public.public_bytes(
    serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
)
pem = public.public_bytes(
    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
)
bundle = {
    "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
    "verificationMaterial": {
        "publicKey": {"hint": base64.b64encode(hashlib.sha256(der).digest()).decode()},
        "tlogEntries": [],
    },
    "dsseEnvelope": {
        "payload": base64.b64encode(statement).decode(),
        "payloadType": PAYLOAD_TYPE,
        "signatures": [{"sig": base64.b64encode(signature).decode(), "keyid": ""}],
    },
}
with open("cryptography-bundle.json", "w") as out:
    json.dump(
        {
            "source": "PyPI cryptography " + __import__("cryptography").__version__,
            "digest": DIGEST,
            "public_key": pem.decode(),
            "bundle": bundle,
        },
        out,
        indent=2,
    )
    out.write("\n")
