import CImageLibraries
import Foundation
import MirrorSync
import MirrorCore
@testable import MirrorFetch
import MirrorImages
@testable import MirrorStorage
import MirrorTestSupport
import MirrorTransport
import Testing

/// What keeps a decode from costing the job: the memory budget the transforms share, and the journal that names the
/// image a run died decoding.
@Suite("Decode budget and journal")
struct DecodeBudgetTests {
    private let folder = TemporaryFolder()

    // MARK: Budget

    @Test func aTakeWaitsForRoomAndTurnsAreKeptInOrder() async throws {
        // Given a budget of 100 with 80 taken
        let budget = DecodeBudget(capacity: 100)
        let first = budget.take(80)
        let order = Locked<[String]>([])

        // When 50 is asked for (and held once taken), then 10 (which would fit at once but comes after), which notes
        // what is taken beside it when its turn comes (the order of the two threads' own lines after their takes is
        // the scheduler's, not the budget's: under ThreadSanitizer "10" was once appended first)
        let release = DispatchSemaphore(value: 0)
        let large = Thread { let taken = budget.take(50); order.withLock { $0.append("50") }; release.wait(); budget.give(taken) }
        large.start()
        #expect(await eventually { budget.waiting == 1 })
        let small = Thread { let taken = budget.take(10); let beside = budget.taken; order.withLock { $0.append("10 beside \(beside)") }; budget.give(taken) }
        small.start()
        #expect(await eventually { budget.waiting == 2 })

        // Then neither runs until the 80 is given back, and then the 50 is taken before the 10: the 10 finds it taken
        #expect(order.withLock { $0 }.isEmpty)
        budget.give(first)
        #expect(await eventually { order.withLock { $0 }.count == 2 })
        #expect(order.withLock { Set($0) } == ["50", "10 beside 60"])
        release.signal()
        #expect(await eventually { budget.taken == 0 })
    }

    @Test func askingForMoreThanTheCapacityTakesAllOfIt() {
        // Given a budget, When a transform that must decode alone asks for everything
        let budget = DecodeBudget(capacity: 64)
        let taken = budget.take(Int.max)

        // Then it holds the whole budget, and gives it all back
        #expect(taken == 64 && budget.taken == 64)
        budget.give(taken)
        #expect(budget.taken == 0)
    }

    @Test func transformsRunningAtOnceNeverHoldMoreThanTheBudget() async throws {
        // Given 8 images whose decodes need about 40 MB each (a 3000 x 3000 progressive JPEG's coefficients), and a
        // budget of 100 MB
        let bomb = HostileImages.jpegBomb(width: 3_000, height: 3_000, subsampling: TJSAMP_444)
        let transform = ImageTransform(fit: .longerSide, size: 64, encoding: .jpeg, memoryLimit: 100_000_000)
        let needed = try transform.estimate(bomb, format: .jpeg)
        #expect(needed > 40_000_000 && needed < 100_000_000)
        let budget = DecodeBudget(capacity: transform.memoryLimit)
        let images = try (0..<8).map { _ in try folder.verifiedImage(bomb) }

        // When they are transformed on 8 threads at once
        let done = Locked(0)
        for image in images {
            Thread {
                _ = try? transform.apply(to: image, validator: ImageValidator(), budget: budget)
                done.withLock { $0 += 1 }
            }.start()
        }
        #expect(await eventually(within: .seconds(120)) { done.withLock { $0 } == images.count })

        // Then no more than two were ever decoded at once (what fits), at least one was, and all of them ended
        #expect(budget.peak <= 2 * needed && budget.peak >= needed)
        #expect(budget.taken == 0)
    }

    // MARK: Journal

    private func url(_ index: Int) -> URL { URL(string: "http://h.test/\(index).jpg")! }

    @Test func marksLeftByARunThatDiedNameTheImagesToTheNext() throws {
        // Given a run that decoded image 1, then 2 and 3 beside it, finished 2, and died
        do {
            let journal = try DecodeJournal(directory: folder.url)
            _ = journal.begin(url(1))
            let finished = journal.begin(url(2))
            _ = journal.begin(url(3))
            journal.end(finished)
        }

        // When the next run opens the journal
        let journal = try DecodeJournal(directory: folder.url)

        // Then the two left are suspects, decoded alone when they come again, and the one that finished is decoded as
        // usual; the crashes are in a file a person can read
        #expect(journal.foundOnOpen == 2)
        #expect(journal.verdict(for: url(1)) == .decodeAlone)
        #expect(journal.verdict(for: url(3)) == .decodeAlone)
        #expect(journal.verdict(for: url(2)) == .decode)
        #expect(try String(contentsOf: journal.crashesURL, encoding: .utf8) == "shared\thttp://h.test/1.jpg\nshared\thttp://h.test/3.jpg\n")
    }

    /// What the crash handler writes when the decoding thread dies: the culprit's flag into its slot.
    private func crashInside(_ mark: DecodeJournal.Mark, of journal: DecodeJournal) {
        let flag = journal.culpritFlag(of: mark)
        var byte = flag.byte
        #expect(pwrite(flag.descriptor, &byte, 1, off_t(flag.offset)) == 1)
    }

    @Test func theImageWhoseDecodeCrashedIsNeverDecodedAgain() throws {
        // Given a run that decoded image 1 and 2 at once, and died of a crash inside image 2's decode
        do {
            let journal = try DecodeJournal(directory: folder.url)
            _ = journal.begin(url(1))
            crashInside(journal.begin(url(2)), of: journal)
        }

        // When the next runs open the journal
        let journal = try DecodeJournal(directory: folder.url)
        let third = try DecodeJournal(directory: folder.url)

        // Then image 2 is not decoded again, by its normalised URL, in every later run; image 1 is decoded alone
        #expect(journal.foundOnOpen == 2 && third.foundOnOpen == 0)
        #expect(journal.verdict(for: url(2)) == .crashed && third.verdict(for: url(2)) == .crashed)
        #expect(journal.verdict(for: URL(string: "http://H.TEST:80/2.jpg")!) == .crashed)
        #expect(journal.verdict(for: url(1)) == .decodeAlone)
        #expect(try String(contentsOf: journal.crashesURL, encoding: .utf8) == "shared\thttp://h.test/1.jpg\nculprit\thttp://h.test/2.jpg\n")
    }

    @Test func aRunKilledFromOutsideDuringADecodeAloneCostsTheImageNothing() throws {
        // Given a run killed (SIGKILL: no handler runs) while it decoded image 3 alone
        do {
            let journal = try DecodeJournal(directory: folder.url)
            journal.end(journal.begin(url(1)))
            _ = journal.begin(url(3))
        }

        // When the next run opens the journal, Then image 3 is only a suspect: decoded alone, and saved if it decodes
        let journal = try DecodeJournal(directory: folder.url)
        #expect(journal.verdict(for: url(3)) == .decodeAlone)
        #expect(journal.verdict(for: url(1)) == .decode)

        // And only a second death during its decode alone makes it the cause
        _ = journal.begin(url(3))
        #expect(try DecodeJournal(directory: folder.url).verdict(for: url(3)) == .crashed)
    }

    @Test func aSuspectWhoseDecodeCrashesWhenDecodedAloneIsTheCulprit() throws {
        // Given an image suspected once (decoded beside another when a run died)
        do {
            let journal = try DecodeJournal(directory: folder.url)
            _ = journal.begin(url(6))
            _ = journal.begin(url(7))
        }
        do {
            let journal = try DecodeJournal(directory: folder.url)
            #expect(journal.verdict(for: url(7)) == .decodeAlone)
            // When the next run decodes it alone and crashes inside it
            crashInside(journal.begin(url(7)), of: journal)
        }

        // Then the run after that does not decode it, and its companion is still only a suspect
        let journal = try DecodeJournal(directory: folder.url)
        #expect(journal.verdict(for: url(7)) == .crashed && journal.verdict(for: url(6)) == .decodeAlone)
    }

    @Test func slotsAreReusedAndALongURLIsNamedByItsHash() throws {
        // Given a journal, When many decodes begin and end one after another
        let journal = try DecodeJournal(directory: folder.url)
        for index in 0..<100 { journal.end(journal.begin(url(index))) }
        let long = URL(string: "http://h.test/" + String(repeating: "a", count: 5_000) + ".jpg")!
        _ = journal.begin(long)

        // Then the file holds one slot (reused), and the long URL is found again by its hash after a death
        #expect(try FileManager.default.attributesOfItem(atPath: journal.decodingURL.path)[.size] as? Int ?? 0 <= 4_096 * 2)
        let next = try DecodeJournal(directory: folder.url)
        #expect(next.verdict(for: long) == .decodeAlone)
        #expect(try String(contentsOf: next.crashesURL, encoding: .utf8).hasPrefix("alone\tsha256:"))
    }

    @Test func aTransformNeverDecodesAnImageADecoderCrashedOn() throws {
        // Given a journal that says a decoder crashed on an image
        do {
            let journal = try DecodeJournal(directory: folder.url)
            crashInside(journal.begin(URL(string: "http://h.test/a")!), of: journal)
        }
        let journal = try DecodeJournal(directory: folder.url)
        let image = try folder.verifiedImage(HostileImages.jpeg(width: 32, height: 32, subsampling: TJSAMP_420))

        // When the image comes again
        let result = Result { () throws(ImageTransform.Failure) in
            try ImageTransform(fit: .longerSide, size: 16, encoding: .jpeg).apply(to: image, validator: ImageValidator(), journal: journal)
        }

        // Then it fails as a decoder crash, and its download is gone
        #expect(result.failureReason == "decoder-crash")
        #expect(!FileManager.default.fileExists(atPath: image.temporaryFile.path))
    }
}
