#!/bin/bash
# Truth rounds per dedup stage: one alternating 9 s run (baseline vs variant) under a speedup-0 sweep of the stage's handler.
B=${DEDUP:-/work/main/build/relwithdebinfo/examples/dedup/coact-dedup}
OUT=${OUT:-/tmp/purity}; mkdir -p $OUT; cd $OUT
declare -A R F
R[Compressor]="coact::dedup::Compressor::on(coact::dedup::NewChunk)"; F[Compressor]="--level 1"
R[Reader]="coact::dedup::Reader::on(coact::dedup::Pump)"; F[Reader]="--fast-reader"
R[Chunker]="coact::dedup::Chunker::on(coact::dedup::Block)"; F[Chunker]="--fast-chunker"
R[Fingerprinter]="coact::dedup::Fingerprinter::on(coact::dedup::RawChunk)"; F[Fingerprinter]="--fingerprint sha1"
R[Index]="coact::dedup::Index::on(coact::dedup::HashedChunk)"; F[Index]="--fast-index"
R[Writer]="coact::dedup::Writer::on(coact::dedup::PackedChunk)"; F[Writer]="--fast-writer"
for i in $(seq 1 ${1:-8}); do for st in Compressor Reader Chunker Fingerprinter Index Writer; do
COACT_CAUSAL=1 COACT_CAUSAL_FIXED_REGION="${R[$st]}" COACT_CAUSAL_FIXED_SPEEDUP=0 COACT_CAUSAL_PROGRESS=chunks COACT_CAUSAL_OUTPUT= \
COACT_CAUSAL_EXPERIMENT_MS=1000 COACT_CAUSAL_MAX_EXPERIMENT_MS=1000 COACT_CAUSAL_JSON_OUTPUT=$OUT/p-$st-$i.jsonl \
$B archive /usr/share/doc -o /dev/shm/pu.cdar -q --seconds 9 ${F[$st]} --alternate --summary-json $OUT/s-$st-$i.json
done; done
