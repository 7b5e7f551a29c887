# Speedup over cuSPARSE per matrix: written by sparserl; run `gnuplot speedup_bars.gp` to redraw.
set terminal pngcairo noenhanced size 900,560 font 'sans,10'
set output '/work/main/docs/examples/quickstart-h100/plots/speedup_bars.png'
set title 'Speedup over cuSPARSE per matrix (above 1: faster; no bar: no correct kernel)'
set ylabel 'speedup (cuSPARSE time / kernel time)'
set logscale y
set yrange [0.6666666666666666:2.6250000000000004]
set ytics ('0.7x' 0.7, '1x' 1.0, '1.5x' 1.5, '2x' 2.0)
set xrange [-1:3]
set grid ytics
set key outside right top
set style fill solid 0.85 border -1
set bmargin 10
set xtics rotate by 60 right font ',8' ('bfwa62' 0, 'bcspwr01' 1, 'bcspwr03' 2)
plot '/work/main/docs/examples/quickstart-h100/plots/speedup_bars.dat' index 0 using 1:2:3:4:(1):2 with boxxyerror lc rgb '#0072B2' title 'grpo', \
     1 with lines dt 2 lc rgb '#444444' title 'cuSPARSE'
