 ▐▛███▛█   Claude Code v2.1.332
▝▜██████▀  Opus 5.5 · API Usage Billing
 ▝▝   ▝▝   /tmp/TestInlineStreamClaudeE2E2090053636/003


❯ INLINE-STREAM print the numbered rows

● row 001 of the inline history ● ❯ ✻ marks
  row 002 of the inline history 🙂 ✅ done
  row 003 of the inline history
  row 004 of the inline history
  row 005 of the inline history 你好，世界
  row 006 of the inline history ● ❯ ✻ marks
  row 007 of the inline history 🙂 ✅ done
  row 008 of the inline history
  row 009 of the inline history
  row 010 of the inline history 你好，世界
  row 011 of the inline history ● ❯ ✻ marks
  row 012 of the inline history 🙂 ✅ done
  row 013 of the inline history
  row 014 of the inline history
  row 015 of the inline history 你好，世界
  row 016 of the inline history ● ❯ ✻ marks
  row 017 of the inline history 🙂 ✅ done
  row 018 of the inline history
  row 019 of the inline history
  row 020 of the inline history 你好，世界
  row 021 of the inline history ● ❯ ✻ marks
  row 022 of the inline history 🙂 ✅ done
  row 023 of the inline history
  row 024 of the inline history
  row 025 of the inline history 你好，世界
  row 026 of the inline history ● ❯ ✻ marks
  row 027 of the inline history 🙂 ✅ done
  row 028 of the inline history
  row 029 of the inline history
  row 030 of the inline history 你好，世界
  row 031 of the inline history ● ❯ ✻ marks
  row 032 of the inline history 🙂 ✅ done
  row 033 of the inline history
  row 034 of the inline history
  row 035 of the inline history 你好，世界
  row 036 of the inline history ● ❯ ✻ marks
  row 037 of the inline history 🙂 ✅ done
  row 038 of the inline history
  row 039 of the inline history
  row 040 of the inline history 你好，世界
  row 041 of the inline history ● ❯ ✻ marks
  row 042 of the inline history 🙂 ✅ done
  row 043 of the inline history
  row 044 of the inline history
  row 045 of the inline history 你好，世界
  row 039 of the inline history
  row 040 of the inline history 你好，世界
  row 041 of the inline history ● ❯ ✻ marks
  row 042 of the inline history 🙂 ✅ done
  row 043 of the inline history
  row 044 of the inline history
  row 045 of the inline history 你好，世界
  row 046 of the inline history ● ❯ ✻ marks
  row 047 of the inline history 🙂 ✅ done
  row 048 of the inline history
  row 049 of the inline history
  row 050 of the inline history 你好，世界
  row 051 of the inline history ● ❯ ✻ marks
  row 052 of the inline history 🙂 ✅ done
  row 053 of the inline history
  row 054 of the inline history
  row 055 of the inline history 你好，世界
  row 056 of the inline history ● ❯ ✻ marks
  row 057 of the inline history 🙂 ✅ done
  row 058 of the inline history
  row 059 of the inline history
  row 060 of the inline history 你好，世界
  row 061 of the inline history ● ❯ ✻ marks
  row 062 of the inline history 🙂 ✅ done
  row 063 of the inline history
  row 064 of the inline history
  row 065 of the inline history 你好，世界
  row 066 of the inline history ● ❯ ✻ marks
  row 067 of the inline history 🙂 ✅ done
  row 068 of the inline history
  row 069 of the inline history
  row 070 of the inline history 你好，世界
  row 071 of the inline history ● ❯ ✻ marks
  row 072 of the inline history 🙂 ✅ done
  row 073 of the inline history
  row 074 of the inline history
  row 075 of the inline history 你好，世界
  row 076 of the inline history ● ❯ ✻ marks
  row 077 of the inline history 🙂 ✅ done
  row 078 of the inline history
  row 079 of the inline history
  row 080 of the inline history 你好，世界
  row 081 of the inline history ● ❯ ✻ marks
  row 082 of the inline history 🙂 ✅ done
  row 083 of the inline history
  row 084 of the inline history
  row 085 of the inline history 你好，世界
  row 086 of the inline history ● ❯ ✻ marks
  row 087 of the inline history 🙂 ✅ done
  row 088 of the inline history
  row 089 of the inline history
  row 090 of the inline history 你好，世界
  row 091 of the inline history ● ❯ ✻ marks
  row 092 of the inline history 🙂 ✅ done
  row 093 of the inline history
  row 094 of the inline history
  row 095 of the inline history 你好，世界
  row 096 of the inline history ● ❯ ✻ marks
  row 097 of the inline history 🙂 ✅ done
  row 098 of the inline history
  row 099 of the inline history
  row 100 of the inline history 你好，世界
  row 101 of the inline history ● ❯ ✻ marks
  row 102 of the inline history 🙂 ✅ done
  row 103 of the inline history
  row 104 of the inline history
  row 105 of the inline history 你好，世界
  row 106 of the inline history ● ❯ ✻ marks
  row 107 of the inline history 🙂 ✅ done
  row 108 of the inline history
  row 109 of the inline history
  row 110 of the inline history 你好，世界
  row 111 of the inline history ● ❯ ✻ marks
  row 112 of the inline history 🙂 ✅ done
  row 113 of the inline history
  row 114 of the inline history
  row 115 of the inline history 你好，世界
  row 116 of the inline history ● ❯ ✻ marks
  row 117 of the inline history 🙂 ✅ done
  row 118 of the inline history
==== grid ====
  row 119 of the inline history
  row 120 of the inline history 你好，世界
  row 121 of the inline history ● ❯ ✻ marks
  row 122 of the inline history 🙂 ✅ done
  row 123 of the inline history
  row 124 of the inline history
  row 125 of the inline history 你好，世界
  row 126 of the inline history ● ❯ ✻ marks
  row 127 of the inline history 🙂 ✅ done
  row 128 of the inline history
  row 129 of the inline history
  row 130 of the inline history 你好，世界
  row 131 of the inline history ● ❯ ✻ marks
  row 132 of the inline history 🙂 ✅ done
  row 133 of the inline history
  row 134 of the inline history
  row 135 of the inline history 你好，世界
  row 136 of the inline history ● ❯ ✻ marks
  row 137 of the inline history 🙂 ✅ done
  row 138 of the inline history
  row 139 of the inline history
  row 140 of the inline history 你好，世界
  row 141 of the inline history ● ❯ ✻ marks
  row 142 of the inline history 🙂 ✅ done
  row 143 of the inline history
  row 144 of the inline history
  row 145 of the inline history 你好，世界
  row 146 of the inline history ● ❯ ✻ marks
  row 147 of the inline history 🙂 ✅ done
  row 148 of the inline history
  row 149 of the inline history
  row 150 of the inline history 你好，世界

✻ Baked for 8s · done 6:08 PM

────────────────────────────────────────────────────────────────────────────────────────────────────
❯ 
────────────────────────────────────────────────────────────────────────────────────────────────────
  ⏵⏵ auto mode on (shift+tab to cycle)
