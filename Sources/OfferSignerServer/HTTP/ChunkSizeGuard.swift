import Foundation
import NIOCore
import NIOHTTP1

/// Refuses a chunk size no `Int64` holds (NIO's decoder takes any up to 2^64 − 1, then waits for that many bytes
/// until the request timeout): the connection gets 400 `malformed_request` at once, through the same path as a
/// chunk size the decoder cannot parse (``HTTP1ConformanceHandler``).
///
/// NIO's HTTP/1 decoder tells its handlers nothing of a chunk's size, so the guard follows the framing itself in
/// the bytes the decoder is given, in step with it: ``ChunkSizeGuard`` sits just before the decoder and reads each
/// buffer once the decoder has taken it; ``ChunkSizeGuard/Heads`` sits just after the decoder and hands it every
/// request head's framing (chunked, a length, none) as the decoder produces it. Heads are found by their blank
/// line (the decoder requires CRLF), bodies of known length are skipped, not read; in a chunked body only the
/// chunk-size lines are read. When the two disagree (a head's end where the decoder produced none) or a request
/// takes the connection elsewhere (`Upgrade`, `CONNECT`), the guard stops for the rest of the connection and the
/// decoder alone decides, as it always did: the guard can refuse nothing else.
final class ChunkSizeGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// How a request's body is framed, from its head.
    enum Framing: Equatable {
        case noBody
        case length(Int64)
        case chunked
        /// A head the guard does not follow past (`Upgrade`, `CONNECT`, a transfer coding that is not chunked).
        case stop
    }

    /// Where the guard is in the byte stream.
    enum State: Equatable {
        /// Before a request line (CR and LF skipped, as the decoder skips them).
        case messageStart
        /// In a head: how much of its closing CRLF CRLF has been seen.
        case head(matched: Int)
        case fixedBody(remaining: Int64)
        /// Reading a chunk size's hex digits.
        case chunkSize(value: Int64, digits: Int)
        /// After a chunk size: its extensions, up to the line's LF.
        case chunkLine(size: Int64)
        case chunkData(remaining: Int64)
        /// After a chunk's data: its CRLF.
        case chunkDataEnd
        /// After the last chunk: trailer lines, up to an empty one.
        case trailers(emptyLine: Bool)
        /// Not following this connection any more.
        case off
    }

    /// The heads the decoder has produced and the guard has not reached yet, in order.
    final class Pending {
        fileprivate var framings: [Framing] = []
        /// Cleared when the guard stops following the connection: heads are no longer kept for it.
        fileprivate var following = true
    }

    private let pending: Pending
    private(set) var state = State.messageStart

    init(pending: Pending) {
        self.pending = pending
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard state != .off else { return context.fireChannelRead(data) }
        let buffer = unwrapInboundIn(data)
        context.fireChannelRead(data)  // the decoder first: the heads in this buffer are then in `pending`
        let refused = !read(buffer)
        if refused { state = .off }
        if state == .off {
            pending.following = false
            pending.framings.removeAll()
        }
        if refused { context.fireErrorCaught(HTTPParserError.invalidChunkSize) }
    }

    /// Follows the framing through `buffer`. `false`: a chunk size no `Int64` holds.
    func read(_ buffer: ByteBuffer) -> Bool {
        buffer.withUnsafeReadableBytes { bytes in
            var index = 0
            while index < bytes.count, state != .off {
                switch state {
                case .messageStart:
                    if bytes[index] == 0x0D || bytes[index] == 0x0A { index += 1 } else { state = .head(matched: 0) }
                case .head(var matched):
                    // CR LF CR LF: on a mismatch, a CR is the start of a new match.
                    while index < bytes.count, matched < 4 {
                        let byte = bytes[index]
                        index += 1
                        if byte == (matched % 2 == 0 ? 0x0D : 0x0A) { matched += 1 } else { matched = byte == 0x0D ? 1 : 0 }
                    }
                    state = matched == 4 ? next(after: pending.framings.isEmpty ? nil : pending.framings.removeFirst()) : .head(matched: matched)
                case .fixedBody(let remaining):
                    let taken = min(remaining, Int64(bytes.count - index))
                    index += Int(taken)
                    state = taken == remaining ? .messageStart : .fixedBody(remaining: remaining - taken)
                case .chunkSize(var value, var digits):
                    while index < bytes.count, let digit = Self.hexValue(bytes[index]) {
                        guard value <= (Int64.max - Int64(digit)) / 16 else { return false }
                        value = value * 16 + Int64(digit)
                        digits += 1
                        index += 1
                    }
                    if index == bytes.count {
                        state = .chunkSize(value: value, digits: digits)
                    } else {
                        state = digits == 0 ? .off : .chunkLine(size: value)  // no digit: the decoder refuses it
                    }
                case .chunkLine(let size):
                    while index < bytes.count, bytes[index] != 0x0A { index += 1 }
                    if index < bytes.count {
                        index += 1
                        state = size == 0 ? .trailers(emptyLine: true) : .chunkData(remaining: size)
                    }
                case .chunkData(let remaining):
                    let taken = min(remaining, Int64(bytes.count - index))
                    index += Int(taken)
                    state = taken == remaining ? .chunkDataEnd : .chunkData(remaining: remaining - taken)
                case .chunkDataEnd:
                    while index < bytes.count, bytes[index] != 0x0A { index += 1 }
                    if index < bytes.count {
                        index += 1
                        state = .chunkSize(value: 0, digits: 0)
                    }
                case .trailers(var emptyLine):
                    // `emptyLine`: the line so far holds nothing but CR; its LF ends the message.
                    var ended = false
                    while index < bytes.count, !ended {
                        let byte = bytes[index]
                        index += 1
                        if byte == 0x0A {
                            ended = emptyLine
                            emptyLine = true
                        } else if byte != 0x0D {
                            emptyLine = false
                        }
                    }
                    state = ended ? .messageStart : .trailers(emptyLine: emptyLine)
                case .off:
                    break
                }
            }
            return true
        }
    }

    private func next(after framing: Framing?) -> State {
        switch framing {
        case nil, .stop: .off  // no head the decoder produced here: out of step, so stop
        case .noBody, .length(0): .messageStart
        case .length(let length): .fixedBody(remaining: length)
        case .chunked: .chunkSize(value: 0, digits: 0)
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }

    /// Reports each head's framing to the guard, as the decoder produces it (placed right after the decoder).
    final class Heads: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias InboundOut = HTTPServerRequestPart

        private let pending: Pending

        init(pending: Pending) {
            self.pending = pending
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if pending.following, case .head(let head) = unwrapInboundIn(data) {
                pending.framings.append(ChunkSizeGuard.framing(of: head))
            }
            context.fireChannelRead(data)
        }
    }

    /// A request head's body framing, as NIO's decoder reads it.
    static func framing(of head: HTTPRequestHead) -> Framing {
        if head.method == .CONNECT || head.headers.contains(name: "upgrade") { return .stop }
        let codings = head.headers["transfer-encoding"].flatMap { $0.split(separator: ",") }
        if let last = codings.last {
            return last.trimmingCharacters(in: .whitespaces).lowercased() == "chunked" ? .chunked : .stop
        }
        guard let length = head.headers.first(name: "content-length") else { return .noBody }
        return Int64(length).map { .length($0) } ?? .stop
    }
}
