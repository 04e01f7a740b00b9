"""Writes cryptography-blob-vector.json: a detached file signature made by another implementation.

The key and the ECDSA P-256 signature (DER, SHA-256) over a file's bytes are made with the PyPI
`cryptography` package (OpenSSL underneath), not with Weir's code, in the format `cosign
sign-blob --key` writes (base64 of the DER signature), so that the verifier's test shows it
reads what another implementation writes. Run once with `pip install cryptography` and
`python make_blob_vector.py`; the output is checked in.
"""

import base64
import json

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

# A component header and some bytes: what is signed is the file, whatever it holds.
BLOB = b"\x00asm\x0d\x00\x01\x00" + bytes(range(256)) * 4

key = ec.generate_private_key(ec.SECP256R1())
signature = key.sign(BLOB, ec.ECDSA(hashes.SHA256()))
public = key.public_key().public_bytes(
    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
)
with open("cryptography-blob-vector.json", "w") as out:
    json.dump(
        {
            "source": "PyPI cryptography " + __import__("cryptography").__version__,
            "public_key": public.decode(),
            "blob": base64.b64encode(BLOB).decode(),
            "signature": base64.b64encode(signature).decode(),
        },
        out,
        indent=2,
    )
    out.write("\n")
