import Foundation

// The values of Apple's Retention Messaging API, under Apple's JSON names
// (https://developer.apple.com/documentation/retentionmessaging/data-types). Enumerations keep a value Apple adds
// later as `.other(raw)` instead of failing the whole answer.

/// `imageSize`: the size class of an uploaded image.
public enum RetentionImageSize: String, Codable, Sendable, Hashable, CaseIterable {
    /// `FULL_SIZE`: an image above the message body, 3840 px wide and 160–2160 px high.
    case fullSize = "FULL_SIZE"
    /// `BULLET_POINT`: a bullet point's icon, 1024 × 1024 px.
    case bulletPoint = "BULLET_POINT"
}

/// `imageState` / `messageState`: where Apple's review of an upload is.
public enum RetentionApprovalState: Codable, Sendable, Hashable, CustomStringConvertible {
    /// `PENDING`: uploaded, not reviewed yet (Sandbox approves at once).
    case pending
    /// `APPROVED`: may be shown.
    case approved
    /// `REJECTED`: will not be shown.
    case rejected
    /// A state this client does not know, as Apple sent it.
    case other(String)

    /// Apple's spelling.
    public var rawValue: String {
        switch self {
        case .pending: "PENDING"
        case .approved: "APPROVED"
        case .rejected: "REJECTED"
        case .other(let raw): raw
        }
    }

    /// The state Apple's spelling names.
    public init(rawValue: String) {
        switch rawValue {
        case "PENDING": self = .pending
        case "APPROVED": self = .approved
        case "REJECTED": self = .rejected
        default: self = .other(rawValue)
        }
    }

    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }
}

/// `headerPosition`: where the header goes.
public enum RetentionHeaderPosition: String, Codable, Sendable, Hashable {
    /// `ABOVE_BODY` (Apple's default): above the body, below the image.
    case aboveBody = "ABOVE_BODY"
    /// `ABOVE_IMAGE`: above the image; needs an image.
    case aboveImage = "ABOVE_IMAGE"
}

/// `UploadMessageImage`: an image of a message, with its alternative text.
public struct RetentionMessageImage: Codable, Sendable, Hashable {
    /// The uploaded image's identifier (a UUID, lowercase as sent).
    public var imageIdentifier: String
    /// The alternative text, at most 150 characters.
    public var altText: String

    public init(imageIdentifier: String, altText: String) {
        self.imageIdentifier = imageIdentifier
        self.altText = altText
    }
}

/// `BulletPoint`: one item of a message's bulleted list.
public struct RetentionBulletPoint: Codable, Sendable, Hashable {
    /// The item's text, at most 66 characters.
    public var text: String
    /// The icon: an image uploaded as ``RetentionImageSize/bulletPoint``.
    public var imageIdentifier: String
    /// The icon's alternative text, at most 150 characters.
    public var altText: String

    public init(text: String, imageIdentifier: String, altText: String) {
        self.text = text
        self.imageIdentifier = imageIdentifier
        self.altText = altText
    }
}

/// `UploadMessageRequestBody`: a message to upload.
///
/// Only a text message (one the App Store shows as is, or as a default message) may carry an image or bullet points;
/// a message answered with a promotional offer or an alternate product must have neither (Apple: "Only text-based
/// retention messages can include images").
public struct RetentionMessage: Codable, Sendable, Hashable {
    /// The header, 1 to 66 characters.
    public var header: String
    /// The body, 1 to 144 characters.
    public var body: String
    /// The image above the body, if any.
    public var image: RetentionMessageImage?
    /// At most 5 bullet points.
    public var bulletPoints: [RetentionBulletPoint]?
    /// Where the header goes; Apple's default is above the body.
    public var headerPosition: RetentionHeaderPosition?

    public init(
        header: String,
        body: String,
        image: RetentionMessageImage? = nil,
        bulletPoints: [RetentionBulletPoint]? = nil,
        headerPosition: RetentionHeaderPosition? = nil
    ) {
        self.header = header
        self.body = body
        self.image = image
        self.bulletPoints = bulletPoints
        self.headerPosition = headerPosition
    }
}

/// `GetImageListResponseItem`.
public struct RetentionImageListItem: Codable, Sendable, Hashable {
    public var imageIdentifier: String?
    public var imageState: RetentionApprovalState?
    /// Apple documents the field; the value is a size class name (`FULL_SIZE`, `BULLET_POINT`), kept as sent.
    public var imageSize: String?

    public init(imageIdentifier: String?, imageState: RetentionApprovalState?, imageSize: String? = nil) {
        self.imageIdentifier = imageIdentifier
        self.imageState = imageState
        self.imageSize = imageSize
    }
}

/// `GetImageListResponse`.
struct RetentionImageList: Codable, Sendable {
    var imageIdentifiers: [RetentionImageListItem]?
}

/// `GetMessageListResponseItem`.
public struct RetentionMessageListItem: Codable, Sendable, Hashable {
    public var messageIdentifier: String?
    public var messageState: RetentionApprovalState?

    public init(messageIdentifier: String?, messageState: RetentionApprovalState?) {
        self.messageIdentifier = messageIdentifier
        self.messageState = messageState
    }
}

/// `GetMessageListResponse`.
struct RetentionMessageList: Codable, Sendable {
    var messageIdentifiers: [RetentionMessageListItem]?
}

/// `DefaultConfigurationRequest` and `DefaultConfigurationResponse`.
struct RetentionDefaultConfiguration: Codable, Sendable {
    var messageIdentifier: String?
}

/// `RealtimeUrlRequest` and `RealtimeUrlResponse`.
struct RetentionRealtimeURL: Codable, Sendable {
    var realtimeURL: String?
}

/// `PerformanceTestRequest`.
struct RetentionPerformanceTestRequest: Codable, Sendable {
    var originalTransactionId: String
}

/// `PerformanceTestConfig`: how Apple runs the test.
public struct RetentionPerformanceTestConfig: Codable, Sendable, Hashable {
    /// Requests in flight at once.
    public var maxConcurrentRequests: Int?
    /// Requests in all.
    public var totalRequests: Int?
    /// The test's duration, in milliseconds (it ends about this long after it started).
    public var totalDuration: Int?
    /// The longest answer time that counts as a success, in milliseconds.
    public var responseTimeThreshold: Int?
    /// The success rate, in percent, the test needs to pass.
    public var successRateThreshold: Int?

    public init(
        maxConcurrentRequests: Int? = nil,
        totalRequests: Int? = nil,
        totalDuration: Int? = nil,
        responseTimeThreshold: Int? = nil,
        successRateThreshold: Int? = nil
    ) {
        self.maxConcurrentRequests = maxConcurrentRequests
        self.totalRequests = totalRequests
        self.totalDuration = totalDuration
        self.responseTimeThreshold = responseTimeThreshold
        self.successRateThreshold = successRateThreshold
    }
}

/// `PerformanceTestResponse`: a started test.
public struct RetentionPerformanceTestStarted: Codable, Sendable, Hashable {
    public var config: RetentionPerformanceTestConfig?
    /// The identifier to ask for the result with.
    public var requestId: String?

    public init(config: RetentionPerformanceTestConfig?, requestId: String?) {
        self.config = config
        self.requestId = requestId
    }
}

/// `PerformanceTestStatus`.
public enum RetentionPerformanceTestStatus: Codable, Sendable, Hashable, CustomStringConvertible {
    case pending
    case pass
    case fail
    /// A status this client does not know, as Apple sent it.
    case other(String)

    public var rawValue: String {
        switch self {
        case .pending: "PENDING"
        case .pass: "PASS"
        case .fail: "FAIL"
        case .other(let raw): raw
        }
    }

    public init(rawValue: String) {
        switch rawValue {
        case "PENDING": self = .pending
        case "PASS": self = .pass
        case "FAIL": self = .fail
        default: self = .other(rawValue)
        }
    }

    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }
}

/// `PerformanceTestResponseTimes`, in milliseconds.
public struct RetentionPerformanceTestResponseTimes: Codable, Sendable, Hashable {
    public var average: Int?
    public var p50: Int?
    public var p90: Int?
    public var p95: Int?
    public var p99: Int?

    public init(average: Int? = nil, p50: Int? = nil, p90: Int? = nil, p95: Int? = nil, p99: Int? = nil) {
        self.average = average
        self.p50 = p50
        self.p90 = p90
        self.p95 = p95
        self.p99 = p99
    }
}

/// `PerformanceTestResultResponse`: a test's result so far.
public struct RetentionPerformanceTestResult: Codable, Sendable, Hashable {
    public var config: RetentionPerformanceTestConfig?
    /// The URL Apple tested.
    public var target: String?
    /// `PENDING` while it runs, then `PASS` or `FAIL`.
    public var result: RetentionPerformanceTestStatus?
    /// The share of successful requests, in percent.
    public var successRate: Int?
    /// Requests not answered yet.
    public var numPending: Int?
    public var responseTimes: RetentionPerformanceTestResponseTimes?
    /// Failed requests by reason (`sendAttemptResult`: `TIMED_OUT`, `NO_RESPONSE`, …).
    public var failures: [String: Int]?

    public init(
        config: RetentionPerformanceTestConfig? = nil,
        target: String? = nil,
        result: RetentionPerformanceTestStatus?,
        successRate: Int? = nil,
        numPending: Int? = nil,
        responseTimes: RetentionPerformanceTestResponseTimes? = nil,
        failures: [String: Int]? = nil
    ) {
        self.config = config
        self.target = target
        self.result = result
        self.successRate = successRate
        self.numPending = numPending
        self.responseTimes = responseTimes
        self.failures = failures
    }
}
