import ArgumentParser
@main struct Mirror: ParsableCommand {}
