import Foundation
import MirrorCore
import Testing

/// Long values in messages: cut, with their length.
@Suite("Cutting long values for messages")
struct MessageCutTests {
    @Test func aShortValueIsWholeAndALongOneIsCutWithItsLength() {
        // Given a value of exactly the limit, and one of 5 MB
        let short = String(repeating: "a", count: 200)
        let long = "http://a.test/" + String(repeating: "b", count: 5_000_000)

        // When they are cut to 200
        let kept = short.cut(to: 200)
        let cut = long.cut(to: 200)

        // Then the first is whole, the second its first 200 characters, an ellipsis and its length in bytes
        #expect(kept == short)
        #expect(cut == String(long.prefix(200)) + "… (5,000,014 bytes)")
        #expect(URL(string: long)!.displayed == cut)
    }

    @Test func oneCharacterOfManyCombiningMarksIsCutToo() {
        // Given one grapheme: a letter and 100,000 combining accents (2 bytes each)
        let text = "e" + String(repeating: "\u{301}", count: 100_000)

        // When it is cut to 10
        let cut = text.cut(to: 10)

        // Then 10 scalars are kept, not the whole character
        #expect(cut.unicodeScalars.count == 10 + "… (200,001 bytes)".unicodeScalars.count)
        #expect(cut.hasSuffix("… (200,001 bytes)"))
    }

    @Test func eachLineOfAMessageIsCutOnItsOwn() {
        let message = "first " + String(repeating: "x", count: 50) + "\nsecond\n"
        #expect(message.cuttingLines(to: 10) == "first xxxx… (56 bytes)\nsecond\n")
    }
}
