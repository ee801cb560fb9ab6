import Foundation

/// The value of one record field: the value kinds CloudKit knows, plus gateway-encrypted bytes.
///
/// There is no null: a field whose value is absent is simply missing from ``Record/fields``.
/// There is no boolean either: booleans are ``int64(_:)`` 0 or 1, as in CloudKit.
public enum FieldValue: Hashable, Sendable, Codable {
    /// UTF-8 text.
    case string(String)
    /// A 64-bit signed integer; also booleans (0/1).
    case int64(Int64)
    /// An IEEE 754 double.
    case double(Double)
    /// A point in time with millisecond precision.
    case timestamp(Timestamp)
    /// Raw bytes stored inline in the record (they count towards the record size limit).
    case bytes(Data)
    // The three large payloads are stored out of line: inline, a location made every value
    // 105 bytes; out of line, a value is 17, and arrays of values move a sixth of the memory.
    /// A reference to another record.
    indirect case reference(Reference)
    /// A reference to an asset whose bytes are stored separately.
    indirect case asset(AssetReference)
    /// A geographic location.
    indirect case location(Location)
    /// An ordered list of values.
    case list([FieldValue])
    /// Ciphertext made by the gateway. Clouds store it opaquely; only the gateway can decrypt it.
    case encrypted(Data)

    /// Every asset reference in this value, including those inside lists.
    public var assetReferences: [AssetReference] {
        var references: [AssetReference] = []
        appendAssetReferences(to: &references)
        return references
    }

    /// Adds this value's asset references to `references`; most values have none, and checking
    /// them allocates nothing.
    func appendAssetReferences(to references: inout [AssetReference]) {
        switch self {
        case .asset(let reference): references.append(reference)
        case .list(let values): for value in values { value.appendAssetReferences(to: &references) }
        default: break
        }
    }
}

/// A reference from one record to another, with what happens when the target is deleted.
public struct Reference: Hashable, Sendable, Codable {
    /// What the cloud does with the referencing record when the target goes away.
    public enum Action: String, Hashable, Sendable, Codable {
        /// Nothing: the reference dangles.
        case none = "NONE"
        /// The referencing record is deleted with its target.
        case deleteSelf = "DELETE_SELF"
        /// The target must exist, and cannot be deleted while referenced.
        case validate = "VALIDATE"
    }

    /// The referenced record.
    public var recordID: RecordID
    /// The deletion behaviour.
    public var action: Action

    /// A reference to `recordID`; `action` says what deleting the target does to the referring
    /// record.
    public init(recordID: RecordID, action: Action = .none) {
        self.recordID = recordID
        self.action = action
    }
}

/// A geographic location, in CloudKit's shape. Latitude and longitude are required.
public struct Location: Hashable, Sendable, Codable {
    /// Degrees north of the equator, -90 to 90.
    public var latitude: Double
    /// Degrees east of Greenwich, -180 to 180.
    public var longitude: Double
    /// Radius of uncertainty for the coordinates, in metres.
    public var horizontalAccuracy: Double?
    /// Accuracy of the altitude, in metres.
    public var verticalAccuracy: Double?
    /// Altitude in metres.
    public var altitude: Double?
    /// Speed in metres per second.
    public var speed: Double?
    /// Direction of travel in degrees from true north.
    public var course: Double?
    /// When the location was determined.
    public var timestamp: Timestamp?

    /// A location; everything but the coordinates is optional, as in CloudKit's `CLLocation`
    /// fields.
    public init(
        latitude: Double, longitude: Double, horizontalAccuracy: Double? = nil,
        verticalAccuracy: Double? = nil, altitude: Double? = nil, speed: Double? = nil,
        course: Double? = nil, timestamp: Timestamp? = nil
    ) {
        self.latitude = latitude
        self.longitude = longitude
        self.horizontalAccuracy = horizontalAccuracy
        self.verticalAccuracy = verticalAccuracy
        self.altitude = altitude
        self.speed = speed
        self.course = course
        self.timestamp = timestamp
    }
}
