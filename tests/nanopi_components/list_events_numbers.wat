;; A nanopi extension-events component written in WAT: everything conforming except list-events, which
;; returns a JSON array of numbers instead of PI event names (NP-06; nanopi's loader refuses a result
;; that is not an array of strings, NANOPI-HOST.md §2 load step 5).
;; Canonical ABI by hand (NANOPI-HOST.md §1): a string result is an i32 pointing at (ptr, len); string
;; parameters are (ptr, len) pairs allocated by the host through cabi_realloc.
(module
  (memory (export "memory") 1)
  ;; The bump arena starts above the data; every export rewinds it before returning.
  (global $heap_base i32 (i32.const 4096))
  (global $top (mut i32) (i32.const 4096))
  (data (i32.const 1024) "[]")
  (data (i32.const 1040) "{\"content\":\"no tools\",\"is_error\":true}")
  (data (i32.const 1100) "{\"error\":\"no commands\"}")
  (data (i32.const 1140) "[1,2,3]")
  (data (i32.const 1160) "{}")

  ;; Writes (ptr, len) to the 8-byte return area at 8 and returns its address.
  (func $ret (param $p i32) (param $n i32) (result i32)
    (global.set $top (global.get $heap_base))
    (i32.store (i32.const 8) (local.get $p))
    (i32.store (i32.const 12) (local.get $n))
    (i32.const 8))

  (func (export "cabi_realloc") (param $old i32) (param $old_size i32) (param $align i32) (param $size i32) (result i32)
    (local $p i32) (local $need i32)
    ;; p = align_up(top, align)
    (local.set $p (i32.and (i32.add (global.get $top) (i32.sub (local.get $align) (i32.const 1)))
                           (i32.sub (i32.const 0) (local.get $align))))
    (global.set $top (i32.add (local.get $p) (local.get $size)))
    (local.set $need (i32.sub (global.get $top) (i32.mul (memory.size) (i32.const 65536))))
    (if (i32.gt_s (local.get $need) (i32.const 0))
      (then (if (i32.eq (memory.grow (i32.shr_u (i32.add (local.get $need) (i32.const 65535)) (i32.const 16)))
                        (i32.const -1))
              (then unreachable))))
    (if (i32.ne (local.get $old) (i32.const 0))
      (then (memory.copy (local.get $p) (local.get $old)
              (select (local.get $old_size) (local.get $size) (i32.lt_u (local.get $old_size) (local.get $size))))))
    (local.get $p))

  (func (export "list-tools") (result i32) (call $ret (i32.const 1024) (i32.const 2)))
  (func (export "execute-tool") (param i32 i32 i32 i32) (result i32) (call $ret (i32.const 1040) (i32.const 38)))
  (func (export "list-commands") (result i32) (call $ret (i32.const 1024) (i32.const 2)))
  (func (export "execute-command") (param i32 i32 i32 i32) (result i32) (call $ret (i32.const 1100) (i32.const 23)))
  (func (export "list-events") (result i32) (call $ret (i32.const 1140) (i32.const 7)))
  (func (export "handle-event") (param i32 i32 i32 i32) (result i32) (call $ret (i32.const 1160) (i32.const 2)))
)
