"""Writes cryptography-vector.json: a cosign-format signature made by another implementation.

The key, the simple-signing payload and the ECDSA P-256 signature over it (DER, SHA-256) are
made with the PyPI `cryptography` package (OpenSSL underneath), not with Weir's code, so that
the verifier's test shows it reads what another implementation writes. Run once with
`pip install cryptography` and `python make_vector.py`; the output is checked in.
"""

import base64
import json

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

DIGEST = "sha256:" + "5e" * 32

key = ec.generate_private_key(ec.SECP256R1())
payload = json.dumps(
    {
        "critical": {
            "identity": {"docker-reference": "registry.example/weir/blog"},
            "image": {"docker-manifest-digest": DIGEST},
            "type": "cosign container image signature",
        },
        "optional": {"team": "payments"},
    }
).encode()
signature = key.sign(payload, ec.ECDSA(hashes.SHA256()))
public = key.public_key().public_bytes(
    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
)
with open("cryptography-vector.json", "w") as out:
    json.dump(
        {
            "source": "PyPI cryptography " + __import__("cryptography").__version__,
            "digest": DIGEST,
            "public_key": public.decode(),
            "payload": base64.b64encode(payload).decode(),
            "signature": base64.b64encode(signature).decode(),
        },
        out,
        indent=2,
    )
    out.write("\n")
