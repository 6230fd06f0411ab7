// The unwinder: a sample's call stack from its register and stack copy
// (RawSample), by a cache of CFI rules per lookup address (the common
// frames: CFA from rsp or rbp, return address and rbp saved at CFA offsets),
// falling back to libdwfl's unwinder (dwfl_getthread_frames over the
// sample's copy) for any frame a cached rule cannot step. Called by the
// sampler's consumer thread (Symbolizer::unwind), never in a signal
// handler; the cache lives as long as the symbolizer.
#include "detail/symbolizer_impl.hpp"

namespace coact::causal {

namespace {

pid_t unwind_next_thread(Dwfl*, void*, void**) { return 0; }  // only dwfl_getthread_frames is used

bool unwind_get_thread(Dwfl*, pid_t, void* dwfl_arg, void** thread_arg) {
  *thread_arg = dwfl_arg;
  return true;
}

bool unwind_memory_read(Dwfl*, Dwarf_Addr addr, Dwarf_Word* result, void* arg) {
  const auto* raw = static_cast<Symbolizer::Impl*>(arg)->current;
  const uint64_t sp = raw->regs[7];
  // Overflow-safe: an unwind gone astray asks for addresses near 2^64, where
  // addr + 8 wrapped to a small number, passed `addr + 8 > sp + len`, and
  // the copy read raw->stack + (addr - sp) far outside the sample (SEGV
  // under TSan, whose deferred signals hand over stale registers).
  if (addr < sp) return false;
  const uint64_t off = addr - sp;
  if (off > raw->stack_len || raw->stack_len - off < sizeof(Dwarf_Word)) return false;
  std::memcpy(result, raw->stack + off, sizeof(Dwarf_Word));
  return true;
}

bool unwind_set_initial_registers(Dwfl_Thread* thread, void* arg) {
  const auto* raw = static_cast<Symbolizer::Impl*>(arg)->current;
  Dwarf_Word regs[kSampleRegs];
  for (uint32_t i = 0; i < kSampleRegs; ++i) regs[i] = raw->regs[i];
  return dwfl_thread_state_registers(thread, 0, kSampleRegs, regs);
}

int unwind_frame(Dwfl_Frame* frame, void* arg) {
  auto& m = *static_cast<Symbolizer::Impl*>(arg);
  Sample& out = *m.out;
  Dwarf_Addr pc = 0;
  bool activation = false;
  if (!dwfl_frame_pc(frame, &pc, &activation) || pc == 0) return DWARF_CB_ABORT;
  if (out.depth == 0 || out.pc[out.depth - 1] != pc) {
    out.pc[out.depth++] = pc;
    // A frame in scope is where attribute() stops: no need to walk further
    // (the same address as line_of: a return address is looked up at pc - 1).
    if (m.stop_at != nullptr && m.stop_at->in_scope_at(pc, out.depth > 1)) return DWARF_CB_ABORT;
  }
  return out.depth < kSampleFrames ? DWARF_CB_OK : DWARF_CB_ABORT;
}

const Dwfl_Thread_Callbacks kUnwindCallbacks = {unwind_next_thread,           unwind_get_thread, unwind_memory_read,
                                                unwind_set_initial_registers, nullptr,           nullptr};

// A register rule "saved at CFA + N" (libdw: DW_OP_call_frame_cfa
// [DW_OP_plus_uconst N]); false for any other form.
bool cfa_offset(const Dwarf_Op* ops, size_t nops, int64_t& off) noexcept {
  if (ops == nullptr || nops == 0 || nops > 2 || ops[0].atom != DW_OP_call_frame_cfa) return false;
  off = nops == 2 ? (ops[1].atom == DW_OP_plus_uconst ? static_cast<int64_t>(ops[1].number) : INT64_MIN) : 0;
  return off != INT64_MIN;
}

// Reads `addr` from the sample's stack copy.
bool stack_word(const RawSample& raw, uint64_t addr, uint64_t& out) noexcept {
  const uint64_t sp = raw.regs[7];
  if (addr < sp) return false;  // overflow-safe, as unwind_memory_read
  const uint64_t off = addr - sp;
  if (off > raw.stack_len || raw.stack_len - off < 8) return false;
  std::memcpy(&out, raw.stack + off, 8);
  return true;
}

}  // namespace

// The rule at lookup address `addr` (cached).
static const Symbolizer::Impl::Rule& rule_at(Symbolizer::Impl& m, uint64_t addr) {
  using Rule = Symbolizer::Impl::Rule;
  auto [it, fresh] = m.rules.try_emplace(addr);
  if (!fresh) return it->second;
  Rule& r = it->second;
  Dwfl_Module* mod = dwfl_addrmodule(m.dwfl, addr);
  Dwarf_Addr bias = 0;
  Dwarf_CFI* cfi = mod != nullptr ? dwfl_module_eh_cfi(mod, &bias) : nullptr;
  Dwarf_Frame* frame = nullptr;
  if (cfi == nullptr || dwarf_cfi_addrframe(cfi, addr - bias, &frame) != 0 || frame == nullptr) return r;  // kOther
  Dwarf_Op* ops = nullptr;
  size_t nops = 0;
  Dwarf_Op mem[3];
  // CFA = register + offset: libdw gives DW_CFA_def_cfa as DW_OP_bregx reg, offset.
  bool cfa_ok = dwarf_frame_cfa(frame, &ops, &nops) == 0 && nops == 1;
  if (cfa_ok && ops[0].atom == DW_OP_bregx && ops[0].number < kSampleRegs) {
    r.cfa_reg = static_cast<uint8_t>(ops[0].number);
    r.cfa_off = static_cast<int64_t>(ops[0].number2);
  } else if (cfa_ok && ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg16) {
    r.cfa_reg = static_cast<uint8_t>(ops[0].atom - DW_OP_breg0);
    r.cfa_off = static_cast<int64_t>(ops[0].number);
  } else {
    cfa_ok = false;
  }
  if (cfa_ok) {
    if (dwarf_frame_register(frame, 16, mem, &ops, &nops) == 0) {
      if (nops == 0 && ops == mem) {
        r.kind = Rule::kOutermost;  // return address undefined: the outermost frame
      } else if (cfa_offset(ops, nops, r.ra_off)) {
        r.kind = Rule::kStep;
      }
    }
    if (r.kind == Rule::kStep && dwarf_frame_register(frame, 6, mem, &ops, &nops) == 0) {
      if (nops == 0) {
        r.rbp = ops == nullptr ? Rule::kSame : Rule::kLost;
      } else if (cfa_offset(ops, nops, r.rbp_off)) {
        r.rbp = Rule::kSaved;
      } else {
        r.kind = Rule::kOther;
      }
    } else if (r.kind == Rule::kStep) {
      r.kind = Rule::kOther;
    }
  }
  std::free(frame);
  return r;
}

// Unwinds `raw` by cached rules into `out`, as libdwfl would (unwind_frame's
// rules: frame 0 at its PC, then return addresses looked up at pc - 1;
// repeated PCs skipped; stop at a frame in `stop_at`, at kSampleFrames, at
// the outermost frame, or where the stack copy ends). False if some frame
// needs libdwfl (Rule::kOther, an unknown register): the caller unwinds
// the sample with libdwfl.
static bool unwind_cached(Symbolizer::Impl& m, const RawSample& raw, Sample& out, Symbolizer* stop_at) {
  using Rule = Symbolizer::Impl::Rule;
  uint64_t pc = raw.pc(), sp = raw.regs[7], rbp = raw.regs[6];
  bool rbp_known = true;
  out.depth = 0;
  for (uint32_t frame = 0;; ++frame) {
    if (pc == 0) break;
    if (out.depth == 0 || out.pc[out.depth - 1] != pc) {
      out.pc[out.depth++] = pc;
      if (stop_at != nullptr && stop_at->in_scope_at(pc, out.depth > 1)) break;
    }
    if (out.depth >= kSampleFrames) break;
    const Rule& r = rule_at(m, frame == 0 ? pc : pc - 1);
    if (r.kind == Rule::kOther) return false;
    if (r.kind == Rule::kOutermost) break;
    uint64_t base = 0;
    if (frame == 0) {
      if (r.cfa_reg >= kSampleRegs) return false;
      base = raw.regs[r.cfa_reg];
    } else if (r.cfa_reg == 7) {
      base = sp;
    } else if (r.cfa_reg == 6 && rbp_known) {
      base = rbp;
    } else {
      return false;  // a CFA in a register only libdwfl tracks
    }
    const uint64_t cfa = base + static_cast<uint64_t>(r.cfa_off);
    uint64_t ra = 0;
    if (!stack_word(raw, cfa + static_cast<uint64_t>(r.ra_off), ra)) break;  // past the copy: libdwfl stops too
    if (r.rbp == Rule::kSaved) {
      if (!stack_word(raw, cfa + static_cast<uint64_t>(r.rbp_off), rbp)) rbp_known = false;
    } else if (r.rbp == Rule::kLost) {
      rbp_known = false;
    }
    sp = cfa;
    pc = ra;
  }
  if (out.depth == 0) {
    out.pc[0] = raw.pc();
    out.depth = 1;
  }
  return true;
}

Sample Symbolizer::unwind(const RawSample& raw, bool to_first_in_scope) {
  Impl& m = *impl_;
  Sample out{};
  out.region = raw.region;
  out.overrun = raw.overrun;
  out.tid = raw.tid;
  out.pc[0] = raw.pc();
  if (to_first_in_scope && in_scope_at(raw.pc(), false)) {
    out.depth = 1;  // the interrupted PC is in scope: nothing to unwind
    return out;
  }
  if (m.attached && cached_rules_ && unwind_cached(m, raw, out, to_first_in_scope ? this : nullptr)) {
    return out;
  }
  if (m.attached) {
    m.current = &raw;
    m.out = &out;
    m.stop_at = to_first_in_scope ? this : nullptr;
    out.depth = 0;
    (void)dwfl_getthread_frames(m.dwfl, raw.tid, unwind_frame, &m);
    m.current = nullptr;
    m.out = nullptr;
    m.stop_at = nullptr;
  }
  if (out.depth == 0) {
    out.pc[0] = raw.pc();
    out.depth = 1;
  }
  return out;
}

}  // namespace coact::causal
