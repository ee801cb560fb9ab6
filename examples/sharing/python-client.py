#!/usr/bin/env python3
"""Reads a shared database of a `gateway cloud serve` endpoint with a CloudKit Web Services
client the gateway did not write: Lionheart's `requests-cloudkit` signer from PyPI and `requests`.

    python3 -m venv venv && venv/bin/pip install requests-cloudkit requests ecdsa pytz
    venv/bin/python python-client.py http://127.0.0.1:8765 iCloud.com.example.Notes \
        owner-key keys/owner.pem participant-key keys/participant.pem Notes

As the owner it reads the zone's share record (its participants and short GUID); as the
participant it accepts the share by that short GUID, lists the shared database, reads the zone's
changes and a record, and tries a write (refused for a read-only participant).
"""
import base64
import hashlib
import json
import sys

import ecdsa
import requests
from requests_cloudkit import CloudKitAuth


class Python3CloudKitAuth(CloudKitAuth):
    """requests-cloudkit 1.0.1 predates Python 3 (it hashes and signs `str`): the same
    signature, over bytes. Nothing else of the library changes."""

    def encode_body(self, body):
        if body is None:
            body = b""
        if isinstance(body, str):
            body = body.encode()
        return base64.b64encode(hashlib.sha256(body).digest()).decode()

    def make_signature(self, formatted_date, body, path):
        message = "{}:{}:{}".format(formatted_date, self.encode_body(body), path).encode()
        key = ecdsa.SigningKey.from_pem(open(self.key_file_name).read())
        return base64.b64encode(key.sign(message, hashfunc=hashlib.sha256, sigencode=ecdsa.util.sigencode_der)).decode()


def main():
    if len(sys.argv) != 8:
        sys.exit(__doc__)
    base_url, container, owner_key, owner_pem, participant_key, participant_pem, zone_name = sys.argv[1:]
    base = f"{base_url}/database/1/{container}/development"
    owner = Python3CloudKitAuth(owner_key, owner_pem)
    participant = Python3CloudKitAuth(participant_key, participant_pem)

    def post(auth, database, operation, body):
        answer = requests.post(f"{base}/{database}/{operation}", data=json.dumps(body), auth=auth)
        answer.raise_for_status()
        return answer.json()

    share = post(owner, "private", "records/lookup", {"zoneID": {"zoneName": zone_name}, "records": [{"recordName": "cloudkit.zoneshare"}]})["records"][0]
    print("share", share["shortGUID"], [(p["userIdentity"]["userRecordName"], p["permission"], p["acceptanceStatus"]) for p in share["participants"]])
    accepted = post(participant, "shared", "records/accept", {"shortGUIDs": [{"value": share["shortGUID"]}]})["results"][0]
    print("accepted", accepted["zoneID"])
    listed = requests.get(f"{base}/shared/zones/list", auth=participant)
    listed.raise_for_status()
    zone = listed.json()["zones"][0]["zoneID"]
    print("shared zones", [z["zoneID"] for z in listed.json()["zones"]])
    changes = post(participant, "shared", "changes/zone", {"zones": [{"zoneID": zone}]})["zones"][0]
    records = [r for r in changes["records"] if r["recordType"] != "cloudkit.share"]
    print("records", [(r["recordName"], {k: v["value"] for k, v in r["fields"].items()}) for r in records])
    if records:
        print("lookup", post(participant, "shared", "records/lookup", {"zoneID": zone, "records": [{"recordName": records[0]["recordName"]}]})["records"][0]["recordName"])
    write = post(participant, "shared", "records/modify", {
        "zoneID": zone,
        "operations": [{"operationType": "create", "record": {"recordName": "from-python", "recordType": "notes", "fields": {"title": {"value": "hello"}}}}],
    })["records"][0]
    print("write", write.get("serverErrorCode", "saved"))


if __name__ == "__main__":
    main()
