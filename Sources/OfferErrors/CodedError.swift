import Foundation

/// A stable, machine-readable error code of one error type (`Domain`), in `snake_case`: what tests compare, what
/// logs and HTTP error bodies carry. Each error type declares its codes as static members of
/// `ErrorCode<ItsType>`, so the codes of two types never mix.
public struct ErrorCode<Domain>: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The `snake_case` name.
    public let rawValue: String

    /// A code by its name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A code by its name.
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }
}

/// The one error shape of every OfferSigner library, modelled on swift-certificates' `CertificateError`: a stable
/// ``ErrorCode`` to compare and map, and a message for humans that says what is wrong and what to do — never key
/// material, a token or a raw customer identifier, never a Swift type name. The server maps each conforming type
/// to HTTP in one place.
public protocol CodedError: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// What went wrong.
    var code: ErrorCode<Self> { get }
    /// What is wrong and what to do, for humans.
    var message: String { get }
}

extension CodedError {
    public var description: String { "\(code.rawValue): \(message)" }

    /// The message, so that `localizedDescription` and argument parsing show it rather than a type name.
    public var errorDescription: String? { message }
}
