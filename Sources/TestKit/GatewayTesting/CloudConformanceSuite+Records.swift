import Foundation
import GatewayCore

extension CloudConformanceSuite {
    static let recordCases: [CloudConformanceCase] = [
        CloudConformanceCase("create assigns a change tag; creating an existing record conflicts") { harness in
            let cloud = try await freshCloud(harness)
            let record = try await create([note("a", title: "first")], in: cloud)[0]
            let tag = try unwrap(record.changeTag, "a saved record has a change tag")
            try expect(record.modifiedAt != nil, "a saved record has a modification time")
            try expectEqual(record.fields, note("a", title: "first").fields, "fields of the saved record")
            let again = try await cloud.modify([.create(note("a", title: "second"))], in: zone, atomic: false)
            let error = try failure(again[0])
            try expectEqual(error.code, .serverRecordChanged, "create of an existing record")
            let server = try unwrap(error.serverRecord, "the conflict carries the server record")
            try expectEqual(server.changeTag, tag, "the server record's tag")
            try expectEqual(server.fields["title"], .string("first"), "the server record's title")
        },
        CloudConformanceCase("a record keeps its creation time across saves, in lookups and in the change feed") { harness in
            let cloud = try await freshCloud(harness)
            let v1 = try await create([note("a", title: "v1")], in: cloud)[0]
            let created = try unwrap(v1.createdAt, "a saved record has a creation time")
            try expect(v1.modifiedAt.map { $0 >= created } == true, "it is not modified before it is created")
            var edit = v1
            edit["title"] = .string("v2")
            let v2 = try saved(try await cloud.modify([.replace(edit)], in: zone, atomic: false)[0])
            try expectEqual(v2.createdAt, created, "an update keeps the creation time")
            let found = try await cloud.lookup([v1.id])
            try expectEqual(found.first??.createdAt, created, "lookup's creation time")
            let feed = try await cloud.fetchChanges(in: zone, since: nil, limit: 10)
            try expectEqual(feed.modified.first { $0.id == v1.id }?.createdAt, created, "the change feed's creation time")
        },
        CloudConformanceCase("replace needs the current change tag and changes it") { harness in
            let cloud = try await freshCloud(harness)
            let v1 = try await create([note("a", title: "v1")], in: cloud)[0]
            var edit = v1
            edit["title"] = .string("v2")
            let v2 = try saved(try await cloud.modify([.replace(edit)], in: zone, atomic: false)[0])
            try expect(v2.changeTag != nil && v2.changeTag != v1.changeTag, "a save changes the tag")
            var stale = v1
            stale["title"] = .string("v3")
            let error = try failure(try await cloud.modify([.replace(stale)], in: zone, atomic: false)[0])
            try expectEqual(error.code, .serverRecordChanged, "replace with a stale tag")
            let server = try unwrap(error.serverRecord, "a stale-tag conflict carries the server record")
            try expectEqual(server.changeTag, v2.changeTag, "the server record is the current version")
            try expectEqual(server.fields["title"], .string("v2"), "the server record's title")
            var untagged = v1
            untagged.changeTag = nil
            let missingTag = try failure(try await cloud.modify([.replace(untagged)], in: zone, atomic: false)[0])
            try expectEqual(missingTag.code, .serverRecordChanged, "replace without a tag")
            try expect(missingTag.serverRecord != nil, "the missing-tag conflict carries the server record")
            let absent = note("nobody", title: "x")
            let unknown = try failure(try await cloud.modify([.replace(absent)], in: zone, atomic: false)[0])
            try expectEqual(unknown.code, .unknownItem, "replace of a record that does not exist")
            try expectEqual(try await cloud.lookup([v1.id])[0]?.fields["title"], .string("v2"), "stored title")
        },
        CloudConformanceCase("replace replaces the whole record; absent fields become null") { harness in
            let cloud = try await freshCloud(harness)
            let v1 = try await create([note("a", title: "v1", extra: ["body": .string("text")])], in: cloud)[0]
            var edit = v1
            edit.fields = ["title": .string("v2")]
            _ = try saved(try await cloud.modify([.replace(edit)], in: zone, atomic: false)[0])
            let stored = try unwrap(try await cloud.lookup([v1.id])[0], "the record exists")
            try expectEqual(stored.fields, ["title": .string("v2")], "fields after a full replace")
        },
        CloudConformanceCase("forceReplace overwrites whatever is there and creates missing records") { harness in
            let cloud = try await freshCloud(harness)
            let v1 = try await create([note("a", title: "v1")], in: cloud)[0]
            var blind = note("a", title: "forced")
            blind.changeTag = "not-a-real-tag"
            let forced = try saved(try await cloud.modify([.forceReplace(blind)], in: zone, atomic: false)[0])
            try expect(forced.changeTag != v1.changeTag, "a forced save changes the tag")
            let created = try saved(
                try await cloud.modify([.forceReplace(note("b", title: "new"))], in: zone, atomic: false)[0])
            let stored = try await cloud.lookup([v1.id, created.id])
            try expectEqual(stored[0]?.fields["title"], .string("forced"), "overwritten record")
            try expectEqual(stored[1]?.fields["title"], .string("new"), "created record")
        },
        CloudConformanceCase("a live record keeps its type: a save under another type fails alone with invalidArguments") { harness in
            let cloud = try await freshCloud(harness)
            let v1 = try await create([note("a", title: "v1")], in: cloud)[0]
            var retyped = note("a", title: "other")
            retyped.recordType = "Other"
            for operation in [RecordOperation.forceReplace(retyped), .forceUpdate(retyped)] {
                let results = try await cloud.modify([operation, .forceReplace(note("b", title: "new"))], in: zone, atomic: false)
                guard case .failed(_, let error) = results[0], error.code == .invalidArguments else {
                    throw ConformanceFailure("a save under another type: expected invalidArguments, got \(results[0])")
                }
                _ = try saved(results[1])
            }
            let stored = try unwrap(try await cloud.lookup([v1.id])[0], "the record exists")
            try expectEqual(stored.recordType, "Note", "the stored type")
            try expectEqual(stored.fields["title"], .string("v1"), "the stored fields")
        },
        CloudConformanceCase("delete needs the current change tag; forceDelete does not") { harness in
            let cloud = try await freshCloud(harness)
            let records = try await create([note("a", title: "a"), note("b", title: "b")], in: cloud)
            var edit = records[0]
            edit["title"] = .string("a2")
            let a2 = try saved(try await cloud.modify([.replace(edit)], in: zone, atomic: false)[0])
            let stale = try failure(
                try await cloud.modify([.delete(records[0].id, changeTag: records[0].changeTag)], in: zone, atomic: false)[0])
            try expectEqual(stale.code, .serverRecordChanged, "delete with a stale tag")
            try expectEqual(stale.serverRecord?.changeTag, a2.changeTag, "the delete conflict's server record")
            let deleted = try await cloud.modify([.delete(a2.id, changeTag: a2.changeTag)], in: zone, atomic: false)
            guard case .deleted(let deletedID) = deleted[0] else {
                throw ConformanceFailure("expected a deletion, got \(deleted[0])")
            }
            try expectEqual(deletedID, a2.id, "the deleted record")
            let missing = try failure(
                try await cloud.modify([.delete(a2.id, changeTag: a2.changeTag)], in: zone, atomic: false)[0])
            try expectEqual(missing.code, .unknownItem, "conditional delete of a deleted record")
            let forced = try await cloud.modify([.forceDelete(records[1].id), .forceDelete(id("never"))], in: zone, atomic: false)
            for result in forced {
                guard case .deleted = result else { throw ConformanceFailure("forceDelete should succeed, got \(result)") }
            }
            try expectEqual(try await cloud.lookup([records[0].id, records[1].id]), [nil, nil], "lookups after deletion")
            let reborn = try await create([note("a", title: "again")], in: cloud)[0]
            try expectEqual(reborn.fields["title"], .string("again"), "a deleted record can be created again")
        },
        CloudConformanceCase("every field kind round-trips exactly") { harness in
            let cloud = try await freshCloud(harness)
            let asset = try await cloud.uploadAsset(Data("attachment".utf8))
            let target = id("target")
            let fields: [String: FieldValue] = [
                "text": .string("héllo ✓ 🌍\n\"quoted\""),
                "empty": .string(""),
                "max": .int64(.max),
                "min": .int64(.min),
                "flag": .int64(1),
                "double": .double(-1234.5678e-10),
                "zero": .double(0),
                "when": .timestamp(Timestamp(millisecondsSince1970: 1_716_000_000_123)),
                "before1970": .timestamp(Timestamp(millisecondsSince1970: -62_135_596_800_000)),
                "blob": .bytes(Data([0, 1, 2, 255, 0])),
                "noBytes": .bytes(Data()),
                "ref": .reference(Reference(recordID: target, action: .deleteSelf)),
                "plainRef": .reference(Reference(recordID: target)),
                "file": .asset(asset),
                "place": .location(
                    Location(
                        latitude: 48.8566, longitude: 2.3522, horizontalAccuracy: 5, verticalAccuracy: 3,
                        altitude: 35, speed: 1.5, course: 90, timestamp: Timestamp(millisecondsSince1970: 1000))),
                "pin": .location(Location(latitude: -33.9, longitude: 151.2)),
                "tags": .list([.string("a"), .string("b")]),
                "mixed": .list([.int64(1), .list([.double(2.5), .list([])]), .bytes(Data([9]))]),
                "nothing": .list([]),
                "secret": .encrypted(Data([0xDE, 0xAD, 0xBE, 0xEF])),
            ]
            let record = Record(id: id("all-kinds"), recordType: "Everything", fields: fields)
            let savedRecord = try await create([record], in: cloud)[0]
            try expectEqual(savedRecord.fields, fields, "fields in the save result")
            let looked = try unwrap(try await cloud.lookup([record.id])[0], "lookup of the record")
            try expectEqual(looked.fields, fields, "fields read back by lookup")
            try expectEqual(looked.recordType, "Everything", "record type read back")
            let fetched = try await fetchAll(cloud, since: nil).modified
            try expectEqual(fetched.first?.fields, fields, "fields read back from the change feed")
        },
        CloudConformanceCase("results come back one per operation, in order, and partial failures apply the rest") {
            harness in
            let cloud = try await freshCloud(harness)
            let existing = try await create([note("b", title: "b"), note("d", title: "d")], in: cloud)
            let results = try await cloud.modify(
                [
                    .create(note("a", title: "a")), .create(note("b", title: "dup")), .create(note("c", title: "c")),
                    .forceDelete(existing[1].id),
                ], in: zone, atomic: false)
            try expectEqual(results.map(\.recordID.recordName), ["a", "b", "c", "d"], "one result per operation, in order")
            _ = try saved(results[0])
            try expectEqual(try failure(results[1]).code, .serverRecordChanged, "the duplicate create")
            _ = try saved(results[2])
            let stored = try await cloud.lookup([id("a"), id("c"), id("d"), id("b")])
            try expect(stored[0] != nil && stored[1] != nil, "the successful operations were applied")
            try expectEqual(stored[2], nil, "the delete after the failed create was applied")
            try expectEqual(stored[3]?.fields["title"], .string("b"), "the failed create changed nothing")
        },
        CloudConformanceCase("atomic requests are all-or-nothing") { harness in
            let cloud = try await freshCloud(harness)
            let v1 = try await create([note("a", title: "v1"), note("keep", title: "k")], in: cloud)[0]
            let before = try await fetchAll(cloud, since: nil).token
            var edit = v1
            edit["title"] = .string("v2")
            _ = try saved(try await cloud.modify([.replace(edit)], in: zone, atomic: true)[0])
            let mid = try await fetchAll(cloud, since: before).token
            var stale = v1
            stale["title"] = .string("v3")
            let results = try await cloud.modify(
                [.create(note("new", title: "n")), .replace(stale), .forceDelete(id("keep"))], in: zone, atomic: true)
            try expectEqual(results.count, 3, "one result per operation")
            try expectEqual(try failure(results[0]).code, .batchRequestFailed, "an innocent operation of a failed atomic request")
            try expectEqual(try failure(results[1]).code, .serverRecordChanged, "the culprit")
            try expectEqual(try failure(results[2]).code, .batchRequestFailed, "another innocent operation")
            let after = try await fetchAll(cloud, since: mid)
            try expect(after.modified.isEmpty && after.deleted.isEmpty, "a failed atomic request leaves no change in the feed")
            let stored = try await cloud.lookup([id("new"), id("a"), id("keep")])
            try expectEqual(stored[0], nil, "the created record of the failed request")
            try expectEqual(stored[1]?.fields["title"], .string("v2"), "the record the failed request would have replaced")
            try expect(stored[2] != nil, "the record the failed request would have deleted")
        },
        CloudConformanceCase("a request of creates only: a live record conflicts, a tombstone is created anew, the rest are saved; atomically, nothing")
        { harness in
            let cloud = try await freshCloud(harness)
            let existing = try await create([note("b", title: "b"), note("t", title: "t")], in: cloud)
            _ = try await cloud.modify([.forceDelete(existing[1].id)], in: zone, atomic: false)
            let before = try await fetchAll(cloud, since: nil).token
            let creates = [note("a", title: "a"), note("b", title: "dup"), note("t", title: "again"), note("c", title: "c")]
            let atomic = try await cloud.modify(creates.map { .create($0) }, in: zone, atomic: true)
            try expectEqual(
                try atomic.map { try failure($0).code }, [.batchRequestFailed, .serverRecordChanged, .batchRequestFailed, .batchRequestFailed],
                "an atomic request of creates meeting a live record")
            let untouched = try await fetchAll(cloud, since: before)
            try expect(untouched.modified.isEmpty && untouched.deleted.isEmpty, "the failed atomic request left no change in the feed")
            let results = try await cloud.modify(creates.map { .create($0) }, in: zone, atomic: false)
            _ = try saved(results[0])
            try expectEqual(try failure(results[1]).code, .serverRecordChanged, "the create of a live record")
            try expectEqual(try failure(results[1]).serverRecord?.fields["title"], .string("b"), "the conflict carries the server record")
            _ = try saved(results[2])
            _ = try saved(results[3])
            let stored = try await cloud.lookup([id("a"), id("b"), id("t"), id("c")])
            try expectEqual(stored.map { $0?.fields["title"] }, [.string("a"), .string("b"), .string("again"), .string("c")], "what the cloud holds")
            let feed = try await fetchAll(cloud, since: before)
            try expectEqual(feed.modified.map(\.id.recordName), ["a", "t", "c"], "the feed lists the saved records in commit order")
        },
        CloudConformanceCase("a request naming a record twice or a record of another zone is refused whole") { harness in
            let cloud = try await freshCloud(harness)
            try await expectCloudError(.invalidArguments, "a record named twice") {
                try await cloud.modify([.create(note("a", title: "1")), .forceDelete(id("a"))], in: zone, atomic: false)
            }
            let elsewhere = ZoneID(zoneName: "Elsewhere")
            try await expectCloudError(.invalidArguments, "a record of another zone") {
                try await cloud.modify(
                    [.create(note("a", title: "1")), .create(note("b", title: "2", zone: elsewhere))], in: zone, atomic: false)
            }
            try expectEqual(try await cloud.lookup([id("a")])[0], nil, "nothing of a refused request is applied")
        },
        CloudConformanceCase("records with invalid names fail alone") { harness in
            let cloud = try await freshCloud(harness)
            let long = String(repeating: "x", count: 300)
            let results = try await cloud.modify(
                [
                    .create(note("", title: "empty name")), .create(note("nul\u{0}name", title: "nul")),
                    .create(note(long, title: "long")), .create(Record(id: id("typeless"), recordType: "")),
                    .create(note("fine", title: "ok")),
                ], in: zone, atomic: false)
            for index in 0..<4 {
                try expectEqual(try failure(results[index]).code, .invalidArguments, "invalid record \(index)")
            }
            _ = try saved(results[4])
        },
        CloudConformanceCase("lookup returns current records and nil for missing or deleted ones, in order") { harness in
            let cloud = try await freshCloud(harness)
            let records = try await create([note("a", title: "a"), note("b", title: "b")], in: cloud)
            _ = try await cloud.modify([.forceDelete(records[1].id)], in: zone, atomic: false)
            let found = try await cloud.lookup([id("missing"), records[1].id, records[0].id])
            try expectEqual(found.count, 3, "one answer per record asked")
            try expectEqual(found[0], nil, "a record that never existed")
            try expectEqual(found[1], nil, "a deleted record")
            try expectEqual(found[2]?.changeTag, records[0].changeTag, "an existing record")
        },
    ]
}
